import Foundation
import NetsimCore
import NIOCore
import NIOEmbedded
import NetsimLoopback
import Testing
@testable import NetsimService

/// The API's connections are held to deadlines, and its HTTP is what clients expect of Go's
/// net/http (Toxiproxy's) (QA 59).
@Suite("API server: deadlines and HTTP manners")
struct APIServerDeadlineTests {
    /// Short deadlines: only a connection the server never ends would wait the 30 s a receive
    /// here waits. (The API answers from a task on Swift's shared pool, which a test batch's
    /// first seconds keep busy: at 10 s, a clean run's answer and close once came too late.)
    static let deadlines = APIDeadlines(request: .milliseconds(300), idle: .milliseconds(600))

    /// A connection's deadline watch is let go with its connection: it kept its context, which
    /// keeps it, and every API or metrics connection left the pair behind (QA 66: RSS grew
    /// ~450 bytes per connection, for good).
    @Test func aConnectionsWatchIsFreedWithIt() throws {
        weak var freed: APIConnectionDeadlines?
        do {
            let channel = EmbeddedChannel()
            let watch = APIConnectionDeadlines(deadlines: Self.deadlines)
            freed = watch
            try channel.pipeline.syncOperations.addHandler(watch)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            _ = try channel.finish()
        }
        #expect(freed == nil, "the watch outlived its connection")
    }

    static func withServer(token: String? = nil, _ body: @escaping @Sendable (Endpoint) throws -> Void) async throws {
        let server = APIServer(api: ToxiproxyAPI(access: APIAccess(token: token), threads: 1), deadlines: deadlines)
        let endpoint = try await server.start(host: "127.0.0.1", port: 0)
        do {
            try await offload { try body(endpoint) }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// The whole answer to what `sent` is, until the server closes.
    static func answer(_ endpoint: Endpoint, to sent: String) throws -> String {
        let socket = try BlockingSocket.connect(to: endpoint)
        defer { socket.close() }
        try socket.send(sent)
        return String(decoding: try socket.receiveToEnd(timeout: .seconds(30)), as: UTF8.self)
    }

    @Test func anUnfinishedRequestGets408AndTheConnectionCloses() async throws {
        try await Self.withServer { endpoint in
            let halfAHead = try Self.answer(endpoint, to: "GET /version HTTP/1.1\r\nHost: x\r\n")
            #expect(halfAHead.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), "\(halfAHead)")
            let shortBody = try Self.answer(endpoint, to: "POST /proxies HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"name\"")
            #expect(shortBody.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), "\(shortBody)")
        }
    }

    @Test func anIdleConnectionIsClosedQuietlyAfterItsAnswer() async throws {
        try await Self.withServer { endpoint in
            let text = try Self.answer(endpoint, to: "GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n") && !text.contains("408"), "kept alive, then closed with nothing more: \(text)")
        }
    }

    @Test func aDeclaredBodyOverTheLimitIsRefusedAtOnce() async throws {
        try await Self.withServer { endpoint in
            let text = try Self.answer(endpoint, to: "POST /populate HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), "\(text)")
        }
    }

    @Test func expect100ContinueIsAnsweredBeforeTheBody() async throws {
        try await Self.withServer { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            let body = #"{"name":"e","upstream":"127.0.0.1:9"}"#
            try socket.send("POST /proxies HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
            let interim = String(decoding: try socket.receive(timeout: .seconds(30)), as: UTF8.self)
            #expect(interim.hasPrefix("HTTP/1.1 100 Continue\r\n"), "\(interim)")
            try socket.send(body)
            let text = String(decoding: try socket.receiveToEnd(timeout: .seconds(30)), as: UTF8.self)
            #expect(text.contains("HTTP/1.1 201 Created\r\n"), "\(text)")
        }
    }

    @Test func a401SaysItsScheme() async throws {
        try await Self.withServer(token: "s3cret") { endpoint in
            let text = try Self.answer(endpoint, to: "GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.1 401 Unauthorized\r\n") && text.contains("\r\nWWW-Authenticate: Bearer\r\n"), "\(text)")
        }
    }
}
