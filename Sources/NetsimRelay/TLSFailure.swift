import Foundation
import NIOSSL

/// What an error on one of the relay's own TLS sessions (interception's leg to upstream, a
/// `bad-cert` handshake with a client) says, in words for the event log.
///
/// Three kinds of error come from NIOSSL: `NIOSSLError` (a handshake or protocol failure,
/// BoringSSL's reason inside), `BoringSSLError`, and `NIOSSLExtraError` (among others, a
/// certificate for another name: "failedToValidateHostname"). An earlier check knew only the
/// first two, so a wrong-name upstream was logged as a plain close.
enum TLSFailure: Equatable {
    /// Not a TLS error (a socket error, a channel state): the caller handles it.
    case notTLS
    /// The peer closed TCP without TLS's close_notify. Most servers end a response so; what
    /// came before arrived whole, and the close is logged as the close it is, not as a failure.
    case closedWithoutCloseNotify
    /// A real failure: a certificate that does not verify, a protocol error.
    case failed(String)

    init(_ error: any Error) {
        if case NIOSSLError.uncleanShutdown = error {
            self = .closedWithoutCloseNotify
        } else if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            self = .failed(Self.readable(String(describing: error)))
        } else {
            self = .notTLS
        }
    }

    /// What a failed handshake with upstream means, in words a user can act on, with NIOSSL's or
    /// BoringSSL's own name kept in brackets to search for (QA 48: the log showed only
    /// `handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 …]))`, and a wrong name
    /// did not say which name). `serverName`: the name the certificate had to carry.
    static func explained(_ error: any Error, serverName: String?) -> String {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the certificate is not for \(serverName ?? "the name asked for") (failedToValidateHostname)"
        }
        let text = readable(String(describing: error))
        return reasons.first { text.contains($0.marker) }?.words ?? text
    }

    /// BoringSSL's reasons netsim puts in words, each found by its name in the error's text.
    private static let reasons: [(marker: String, words: String)] = [
        ("EOF during handshake", "upstream closed the connection during the handshake (EOF during handshake)"),
        ("WRONG_VERSION_NUMBER", "upstream does not speak TLS there (WRONG_VERSION_NUMBER: plain HTTP on that port?)"),
        ("CERTIFICATE_VERIFY_FAILED", "the certificate does not verify: not issued by a CA netsim trusts (--upstream-ca, or the system's trust store), expired, or not yet valid (CERTIFICATE_VERIFY_FAILED)"),
    ]

    /// BoringSSL's text without the source file and line it names (`… at /…/handshake.cc:320`):
    /// a build path says nothing to the user.
    static func readable(_ text: String) -> String {
        text.replacingOccurrences(of: #" at /[^\s\]\),]+:\d+"#, with: "", options: .regularExpression)
    }
}
