#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NetsimCore
@testable import NetsimLoopback
import Testing

/// The test clients' and servers' blocking socket never frees its descriptor's number under a
/// call still to be made on it: freed, the number goes to the next socket opened (in a test run,
/// most likely a relay's), and a late `recv(2)` read that socket's bytes — the relay lost them,
/// and a debug build of SwiftNIO asserted on the empty read its readiness event then found.
@Suite("blocking sockets")
struct BlockingSocketTests {
    /// What the server's end of the connection read, once it returned.
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var bytes: [UInt8]?
        let done = DispatchSemaphore(value: 0)
        func set(_ value: [UInt8]?) {
            lock.withLock { bytes = value }
            done.signal()
        }
        var value: [UInt8]? { lock.withLock { bytes } }
    }

    @Test func aCloseWhileACallIsInTheSocketTakesEffectWhenTheCallReturns() async throws {
        let seen = Seen()
        let server = try LoopbackServer { socket in seen.set(try? socket.receiveToEnd(timeout: .seconds(20))) }
        defer { server.stop() }
        let client = try BlockingSocket.connect(to: server.endpoint)
        try client.using { fd in
            client.close()
            // Still this socket's number: nothing else can have been given it.
            #expect(fcntl(fd, F_GETFD) != -1, "the descriptor was closed under a call in progress")
            // Nothing new starts on a closed socket.
            #expect(throws: SocketFailure.other(errno: EBADF)) { try client.send("late") }
            #expect(throws: SocketFailure.other(errno: EBADF)) { try client.receive(timeout: .milliseconds(1)) }
        }
        // The call returned: the socket is closed now, and the server reads its end.
        let ended = try await offload { seen.done.wait(timeout: .now() + 20) == .success }
        #expect(ended, "the server never saw the client's end")
        #expect(seen.value == [], "the server read \(String(describing: seen.value)), not the end")
    }

    @Test func aCloseWithNoCallInProgressClosesAtOnce() async throws {
        let seen = Seen()
        let server = try LoopbackServer { socket in seen.set(try? socket.receiveToEnd(timeout: .seconds(20))) }
        defer { server.stop() }
        let client = try BlockingSocket.connect(to: server.endpoint)
        try client.send("x")
        client.close()
        client.close()  // a second close is nothing (the number may be another socket's by now)
        let ended = try await offload { seen.done.wait(timeout: .now() + 20) == .success }
        #expect(ended && seen.value == Array("x".utf8))
    }
}
