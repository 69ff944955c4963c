#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix

/// Two connected TCP sockets on 127.0.0.1, made with plain system calls: the join between a
/// connection's wire layer and its HTTP layer when the relay intercepts TLS.
///
/// TCP, not a Unix socket pair: a reset must cross the join as a reset (SO_LINGER 0 on one end
/// makes the other read ECONNRESET), as it does between a relay and a real server.
enum LoopbackPair {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var code: Int32
        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    /// Returns (connecting end, accepted end), both close-on-exec; the caller owns both.
    static func make() throws -> (NIOBSDSocket.Handle, NIOBSDSocket.Handle) {
        #if os(Linux)
        try makeOnLinux()
        #else
        throw Failure(call: "TLS interception's loopback pair (Linux only for now)", code: ENOTSUP)
        #endif
    }

    #if os(Linux)
    private static func makeOnLinux() throws -> (NIOBSDSocket.Handle, NIOBSDSocket.Handle) {
        let listener = try check("socket", socket(AF_INET, closeOnExecStreamSocketType, 0))
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withSocketAddress(&address) { _ = try check("bind", bind(listener, $0, length)) }
        _ = try check("listen", listen(listener, 1))
        try withSocketAddress(&address) { _ = try check("getsockname", getsockname(listener, $0, &length)) }
        let connecting = try check("socket", socket(AF_INET, closeOnExecStreamSocketType, 0))
        do {
            // Completes at once on loopback: the kernel finishes the handshake into the backlog.
            try withSocketAddress(&address) { _ = try check("connect", connect(connecting, $0, length)) }
            let accepted = try check("accept", accept(listener, nil, nil))
            _ = fcntl(accepted, F_SETFD, FD_CLOEXEC)
            for fd in [connecting, accepted] {
                var on: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            }
            return (connecting, accepted)
        } catch {
            close(connecting)
            throw error
        }
    }

    #endif

    private static func withSocketAddress(_ address: inout sockaddr_in, _ body: (UnsafeMutablePointer<sockaddr>) throws -> Void) throws {
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0) }
        }
    }

    private static func check(_ call: String, _ result: Int32) throws -> Int32 {
        guard result >= 0 else { throw Failure(call: call, code: errno) }
        return result
    }
}

extension LoopbackPair {
    /// A connected pair on `eventLoop`: one end becomes the wire layer's upstream leg
    /// (`wireSide` sets up its pipeline, and its channel is the result), the other the relay's
    /// own side behind it (`otherSide`).
    static func join(on eventLoop: any EventLoop, wireSide: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>,
                     otherSide: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
        let ends: (NIOBSDSocket.Handle, NIOBSDSocket.Handle)
        do { ends = try make() } catch { return eventLoop.makeFailedFuture(error) }
        let other = Relay.legOptions(ClientBootstrap(group: eventLoop)).channelInitializer(otherSide).withConnectedSocket(ends.1)
        let wire = Relay.legOptions(ClientBootstrap(group: eventLoop)).channelInitializer(wireSide).withConnectedSocket(ends.0)
        return other.and(wire).map { $0.1 }
    }
}
