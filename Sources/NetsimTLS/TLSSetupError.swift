import Foundation

/// Why netsim's TLS could not be set up: each case prints as one line naming the file and cause,
/// and for netsim's CA what to do about it.
public enum TLSSetupError: Error, Equatable, CustomStringConvertible {
    case notADirectory(String)
    case cannotWrite(String, reason: String)
    case cannotRead(String, reason: String)
    /// A file that should hold PEM does not (or holds something else than what was expected).
    case notPEM(String, expected: String)
    /// A CA file that starts as PEM but does not parse: cut short (a full disk, a copy
    /// interrupted) or edited. QA 62: it was called "not PEM … (a file starting with
    /// '-----BEGIN')", which it was.
    case damaged(String, expected: String)
    /// One of the CA's two files is there without the other. QA 62: "The file doesn't exist",
    /// with no name and no way out.
    case missing(String, beside: String)
    /// A directory where a CA file should be. QA 62: "NSCocoaErrorDomain error 256".
    case isADirectory(String, expected: String)
    /// The CA's certificate and key on disk are not a pair.
    case keyMismatch(certificate: String, key: String)
    case unusable(String, reason: String)
    /// netsim's CA (in the directory named) ended on that date (``CertificateAuthority``'s validity).
    case authorityExpired(String, on: Date)
    /// netsim's CA (in the directory named) starts only on that date: this clock is behind it.
    case authorityNotYetValid(String, from: Date)

    /// The way out of a CA that cannot be used as it is.
    static let regenerate = "run `netsim ca --regenerate` to make a new CA (clients must trust the new one again)"

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
        case .damaged(let path, let expected):
            return "\(path) is damaged or incomplete: it starts as PEM but does not read as \(expected); \(Self.regenerate)"
        case .missing(let path, let beside):
            return "\(path) is missing (\(beside) is there without it); \(Self.regenerate)"
        case .isADirectory(let path, let expected):
            return "\(path) is a directory, not \(expected); move it away, then \(Self.regenerate)"
        case .keyMismatch(let certificate, let key):
            return "\(key) is not the private key of \(certificate); \(Self.regenerate)"
        case .unusable(let path, let reason):
            return "\(path): \(reason)"
        case .authorityExpired(let place, let end):
            return "netsim's CA in \(place) expired on \(CAFiles.utcText(end)); make a new one with `netsim ca --regenerate` (clients must trust the new one again)"
        case .authorityNotYetValid(let place, let start):
            return "netsim's CA in \(place) is valid only from \(CAFiles.utcText(start)) on: this machine's clock is behind it, or it was made where the clock was ahead; "
                + "set the clock right, or make a new one with `netsim ca --regenerate` (clients must trust the new one again)"
        }
    }
}
