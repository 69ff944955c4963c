import NIOCore
import NIOPosix

/// How a reference client's connect treats the host name's lookup — the difference that a slow
/// resolver (Network Link Conditioner's "High Latency DNS", the `high-latency-dns` scenario)
/// makes visible.
enum NameLookup: Sendable {
    /// SwiftNIO's default: the lookup is part of the connect, inside its connect timeout, so a
    /// resolver slower than the connect timeout makes every connect time out (`naive`).
    case withinConnectTimeout
    /// The name is looked up first, on its own (bounded by the resolver's own timeouts, as
    /// getaddrinfo's callers are), then the connect timeout bounds the TCP connect alone — as
    /// OkHttp, URLSession and curl count it (`resilient`).
    case beforeConnect

    /// A connected channel to `host`:`port` made by `bootstrap`, and its local port — read on
    /// the channel's loop as the connect completes: a reset that lands before the caller
    /// resumes closes the channel, and a closed channel no longer knows its address.
    func connect(_ bootstrap: ClientBootstrap, host: String, port: Int) async throws -> (channel: any Channel, localPort: Int?) {
        guard self == .beforeConnect, (try? SocketAddress(ipAddress: host, port: port)) == nil else {
            return try await Self.withLocalPort(bootstrap.connect(host: host, port: port))
        }
        let address: SocketAddress
        do {
            address = try await NIOThreadPool.singleton.runIfActive { try SocketAddress.makeAddressResolvingHost(host, port: port) }
        } catch {
            throw NameLookupFailure(host: host, underlying: error)
        }
        return try await Self.withLocalPort(bootstrap.connect(to: address))
    }

    private static func withLocalPort(_ connected: EventLoopFuture<any Channel>) async throws -> (channel: any Channel, localPort: Int?) {
        try await connected.map { (channel: $0, localPort: $0.localAddress?.port) }.get()
    }
}

/// A host name that did not resolve (reported as the `dns` error kind).
struct NameLookupFailure: Error, CustomStringConvertible {
    var host: String
    var underlying: any Error
    var description: String { "cannot resolve \(host): \(underlying)" }
}
