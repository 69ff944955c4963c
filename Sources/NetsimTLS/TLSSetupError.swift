/// Why netsim's TLS could not be set up: each case prints as one line naming the file and cause.
public enum TLSSetupError: Error, Equatable, CustomStringConvertible {
    case notADirectory(String)
    case cannotWrite(String, reason: String)
    case cannotRead(String, reason: String)
    /// A file that should hold PEM does not (or holds something else than what was expected).
    case notPEM(String, expected: String)
    /// The CA's certificate and key on disk are not a pair.
    case keyMismatch(certificate: String, key: String)
    case unusable(String, reason: String)

    public var description: String {
        switch self {
        case .notADirectory(let path):
            return "\(path) is not a directory (NETSIM_HOME must name a directory netsim may write)"
        case .cannotWrite(let path, let reason):
            return "cannot write \(path): \(reason)"
        case .cannotRead(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .notPEM(let path, let expected):
            return "\(path) is not PEM: expected \(expected) (a file starting with '-----BEGIN')"
        case .keyMismatch(let certificate, let key):
            return "\(key) is not the private key of \(certificate); run `netsim ca --regenerate` to make a new CA"
        case .unusable(let path, let reason):
            return "\(path): \(reason)"
        }
    }
}
