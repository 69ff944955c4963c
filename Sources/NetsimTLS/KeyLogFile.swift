import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Appends TLS session secrets in the SSLKEYLOGFILE format (NSS's key log: one `LABEL
/// client_random secret` line per secret) so Wireshark and tshark decrypt a capture
/// (`tshark -r run.pcap -o tls.keylog_file:run.keys`). Lines from every connection go to one file,
/// written as each handshake produces them.
public final class KeyLogFile: Sendable {
    public let url: URL
    private let handle: NIOLockedValueBox<FileHandle>

    /// Creates (or truncates) the file with mode 0600: the secrets decrypt the run's traffic.
    public init(url: URL) throws {
        self.url = url
        guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = FileHandle(forWritingAtPath: url.path)
        else { throw TLSSetupError.cannotWrite(url.path, reason: "cannot create the key log file") }
        self.handle = NIOLockedValueBox(handle)
    }

    /// `run.pcap` → `run.keys`: where netsim writes a capture's secrets.
    public static func url(besidePcap path: String) -> URL {
        let url = URL(fileURLWithPath: path)
        // A capture named `x.keys` keeps its name and gets `x.keys.keys`: the secrets were
        // written over by the capture (QA 37).
        guard url.pathExtension.lowercased() != "keys" else { return url.appendingPathExtension("keys") }
        return url.pathExtension.isEmpty ? url.appendingPathExtension("keys") : url.deletingPathExtension().appendingPathExtension("keys")
    }

    /// The callback to put in a `TLSConfiguration`.
    public var callback: NIOSSLKeyLogCallback {
        { [self] line in append(line) }
    }

    func append(_ line: ByteBuffer) {
        var bytes = Array(line.readableBytesView)
        if bytes.last != 0x0A { bytes.append(0x0A) }
        handle.withLockedValue { try? $0.write(contentsOf: bytes) }
    }

    public func close() {
        handle.withLockedValue { try? $0.close() }
    }
}
