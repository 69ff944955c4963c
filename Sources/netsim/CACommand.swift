import NetsimCore
import ArgumentParser
import Foundation
import NetsimTLS

/// `netsim ca`: netsim's certificate authority — where it is, its fingerprint, its PEM.
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Show netsim's certificate authority (made on first use in $NETSIM_HOME, default ~/.netsim).",
        discussion: """
            Clients trust TLS interception and the built-in TLS upstream by trusting this CA \
            (docs/tls.md: iOS simulator, Android emulator, macOS, Debian). Its private key \
            (ca-key.pem, mode 0600) never leaves $NETSIM_HOME. --regenerate replaces both files: \
            devices that trusted the old CA must be given the new one.
            """)

    @Flag(help: "Print the CA certificate as PEM (to install it in a trust store).")
    var pem = false

    @Flag(help: "Make a new CA, replacing the one in $NETSIM_HOME.")
    var regenerate = false

    func run() throws {
        let home = NetsimHome.fromEnvironment()
        let authority: CertificateAuthority
        do {
            authority = try CertificateAuthority.load(from: home, regenerate: regenerate)
        } catch let error as TLSSetupError {
            StandardStream.error.write("netsim ca: \(error)\n")
            throw ExitCode(2)
        }
        if pem {
            print(try authority.pem, terminator: "")
            return
        }
        print("certificate: \(home.caCertificate.path)")
        print("key:         \(home.caKey.path) (mode \(authority.keyModeText ?? "?"))")
        print("subject:     \(authority.certificate.subject)")
        print("valid until: \(authority.certificate.notValidAfter)")
        if let note = authority.expiryNote() { StandardStream.error.write("netsim ca: note: \(note)\n") }
        print("SHA-256:     \(try authority.fingerprintSHA256)")
    }
}
