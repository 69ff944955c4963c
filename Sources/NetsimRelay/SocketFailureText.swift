#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NetsimCore
import NIOPosix

/// A socket failure in the words a person reads: NIO's own descriptions carry its signatures and
/// type names (`bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)`,
/// `Connection errors: SingleConnectionFailure(…, error: connection reset (error set): …)`),
/// which is what the relay's bind errors and the proxy's 502 bodies showed.
public enum SocketFailureText {
    /// `address already in use`, `connection refused`, `the name api.test does not resolve`.
    public static func describe(_ error: any Error) -> String {
        if let io = error as? IOError { return reason(errno: io.errnoCode) }
        if let unknown = error as? SocketAddressError.UnknownHost {
            return "the name \(unknown.host) does not resolve (\(unknown.errorDescription))"
        }
        if let connection = error as? NIOConnectionError {
            // Every address failed: the first failure says why.
            if let first = connection.connectionErrors.first { return describe(first.error) }
            if let lookup = connection.dnsAError ?? connection.dnsAAAAError { return describe(lookup) }
            return "the name \(connection.host) has no address"
        }
        if let channel = error as? ChannelError, case .connectTimeout(let after) = channel {
            return "no answer to the connect within \(Duration.nanoseconds(after.nanoseconds).compactDescription)"
        }
        return "\(error)"
    }

    /// The system's words for `code`, with what usually causes the common ones.
    public static func reason(errno code: Int32) -> String {
        switch code {
        case EADDRINUSE: "address already in use (another process, or another of this command's own listeners, has it)"
        case EACCES: "permission denied (ports below 1024 need root)"
        case EADDRNOTAVAIL: "no such address on this machine"
        case ECONNREFUSED: "connection refused (nothing listens there)"
        default: String(cString: strerror(code)).lowercased()
        }
    }

    /// The event log's reason for a failed upstream connect, and its detail.
    public static func classify(_ error: any Error) -> (UpstreamFailure, String) {
        if case ChannelError.connectTimeout = error { return (.timeout, "connect timed out") }
        // Interception's TLS to upstream, failed before its connect completed (TLSHandshakeGate).
        if let gate = error as? TLSHandshakeGate.Failure {
            if case .timedOut = gate { return (.timeout, gate.description) }
            return (.other, gate.description)
        }
        if case .failed(let reason) = TLSFailure(error) { return (.other, "TLS with upstream failed: \(reason)") }
        // Every address failed (a connect by name): the first failure says why.
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first { return classify(first.error) }
        if let io = error as? IOError {
            // In words, not NIO's `socket(domain:type:protocolSubtype:): Too many open files) (errno: 24)` (QA 39).
            let words = "\(reason(errno: io.errnoCode)) (errno \(io.errnoCode))"
            switch io.errnoCode {
            case ECONNREFUSED: return (.refused, "connection refused")
            case ETIMEDOUT: return (.timeout, "connect timed out")
            case EHOSTUNREACH, ENETUNREACH: return (.unreachable, words)
            default: return (.other, words)
            }
        }
        // A name that does not resolve in words, as the 502's body says it (QA 67: the log had
        // NIO's `DNS error: SocketAddressError.UnknownHost: … (error -2) for host …`).
        return (.other, describe(error))
    }
}
