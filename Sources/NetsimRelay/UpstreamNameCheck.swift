import NIOCore
import NIOSSL
import NetsimTLS

/// The client handler of interception's TLS to upstream, with the name check swift-nio-ssl leaves
/// out: its identity check passes a certificate whose IP address names the address connected to,
/// whatever name was asked for (QA 41: `--upstream-name bank.example.com` accepted a certificate
/// for `127.0.0.1` alone). A name asked for must be one of the leaf's DNS names, as curl and
/// browsers require; a leaf with no alternative names at all is left to NIOSSL's common-name check.
/// Runs after the chain verified and before the handshake completes, so nothing is sent to a
/// server that fails it; it fails as NIOSSL's own check does (`failedToValidateHostname`).
enum UpstreamNameCheck {
    /// The handler for `context`; `serverName` is also sent as SNI. `verifies`: false under
    /// `--upstream-insecure`, which checks nothing.
    static func handler(_ context: NIOSSLContext, serverName: String?, verifies: Bool) throws -> NIOSSLClientHandler {
        guard verifies, let serverName, case .dns(let expected) = ServerName(serverName) else {
            return try NIOSSLClientHandler(context: context, serverHostname: serverName)
        }
        return try NIOSSLClientHandler._makeSSLClientHandler(context: context, serverHostname: serverName) { leaf, channel in
            carries(leaf, dnsName: expected)
                ? channel.eventLoop.makeSucceededVoidFuture()
                : channel.eventLoop.makeFailedFuture(NIOSSLExtraError.failedToValidateHostname)
        }
    }

    /// Whether `leaf` names `name` (lowercased, no trailing dot) among its DNS alternative names,
    /// or has no alternative names at all.
    static func carries(_ leaf: NIOSSLCertificate, dnsName name: String) -> Bool {
        var any = false
        for alternative in leaf._subjectAlternativeNames() {
            any = true
            guard alternative.nameType == .dnsName else { continue }
            let pattern = alternative.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
            if matches(pattern, name) { return true }
        }
        return !any
    }

    /// RFC 6125 6.4: the names equal ignoring case and a trailing dot, or `pattern` is
    /// `*.REST` and `name` is one more label, without a dot, in front of REST.
    static func matches(_ pattern: String, _ name: String) -> Bool {
        guard case .dns(let pattern) = ServerName(pattern) else { return false }  // lowercased, no trailing dot
        if pattern == name { return true }
        guard pattern.hasPrefix("*."), let dot = name.firstIndex(of: ".") else { return false }
        let rest = pattern.dropFirst(2)
        return dot != name.startIndex && !rest.isEmpty && name[name.index(after: dot)...] == rest
    }
}
