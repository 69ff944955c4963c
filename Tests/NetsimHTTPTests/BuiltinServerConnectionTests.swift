import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import Testing

@Suite("Built-in HTTP server: connections")
struct BuiltinServerConnectionTests {
    @Test func keepAliveReusesTheConnectionAndConnectionsAreNumberedInAcceptOrder() async throws {
        try await withServer([HTTPRoute(path: "/r", body: .text("r"))]) { server, endpoint in
            try await offload {
                let first = try RawHTTPConnection(endpoint)
                _ = try first.request("GET", "/r")
                _ = try first.request("GET", "/r")
                _ = try RawHTTPConnection(endpoint).request("GET", "/r")
            }
            let seen = server.requests
            #expect(seen.map(\.connection) == [1, 1, 2])
            #expect(seen.map(\.reusedConnection) == [false, true, false])
            #expect(seen[0].time >= 0 && seen[0].time <= seen[1].time && seen[1].time <= seen[2].time)
        }
    }

    @Test func idleKeepAliveConnectionsAreClosedAfterTheTimeoutButBusyOnesAreNot() async throws {
        let routes = [HTTPRoute(path: "/quick"), HTTPRoute(path: "/slow", body: .text("worth the wait"), delay: .milliseconds(700))]
        try await withServer(routes, idleTimeout: .milliseconds(300)) { _, endpoint in
            let (closedAfter, slowText, silentClosed) = try await offload { () -> (Duration?, String, Bool) in
                // A connection that never sends a request is idle from the start.
                let silent = try RawHTTPConnection(endpoint)
                let idle = try RawHTTPConnection(endpoint)
                // Stamped before the request: the server's idle timer starts after its answer, so
                // the close comes at least the timeout after this however late this thread runs.
                let asked = ContinuousClock.now
                _ = try idle.request("GET", "/quick")
                let closed = try idle.readEOF(within: .seconds(5))
                let closedAfter = closed ? ContinuousClock.now - asked : nil

                // Waiting 700 ms for an answer is not idleness: the answer arrives.
                let busy = try RawHTTPConnection(endpoint)
                let slow = try busy.request("GET", "/slow")
                return (closedAfter, slow.text, try silent.readEOF(within: .seconds(5)))
            }
            #expect(silentClosed)
            let closedAfterValue = try #require(closedAfter)
            #expect(closedAfterValue >= .milliseconds(300) && closedAfterValue < .seconds(3))
            #expect(slowText == "worth the wait")
        }
    }

    /// Behind the relay a connection reaches the server a handshake before its first request
    /// does; its idle time counts from when it would have been accepted on the link (QA 35:
    /// `idle_timeout: 1s` behind 500 ms of latency closed every new connection before its request).
    @Test func aNewConnectionsIdleTimeStartsWhenTheLinkWouldHaveAcceptedIt() async throws {
        // The first two connections (accepted in connect order) get a 2 s handshake allowance,
        // the third none: the third's close (300 ms idle) says, with no sleep, that the first has
        // been idle longer than the plain timeout.
        let accepts = AcceptCounter()
        let (answer, silentClosedAfter) = try await withServer([HTTPRoute(path: "/r", body: .text("r"))], idleTimeout: .milliseconds(300)) { server, endpoint in
            server.allowForHandshake { accepts.next() <= 2 ? .seconds(2) : .zero }
            return try await offload { () -> (String, Duration?) in
                let connected = ContinuousClock.now
                let late = try RawHTTPConnection(endpoint)
                let silent = try RawHTTPConnection(endpoint)
                let probe = try RawHTTPConnection(endpoint)
                #expect(try probe.readEOF(within: .seconds(10)), "a connection with no allowance is closed after 300 ms")
                // Past the 300 ms idle time from its accept, inside the 2.3 s from the link's.
                let answer = try late.request("GET", "/r").text
                let closed = try silent.readEOF(within: .seconds(10))
                return (answer, closed ? ContinuousClock.now - connected : nil)
            }
        }
        #expect(answer == "r")
        // A connection that never sends a request is still closed: 2 s + 300 ms after its accept.
        let closedAfter = try #require(silentClosedAfter)
        #expect(closedAfter >= .milliseconds(2300) && closedAfter < .seconds(8), "\(closedAfter)")
    }

    /// Counts the built-in server's accepts (its handshake allowance is asked once per accept).
    final class AcceptCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func next() -> Int { lock.withLock { count += 1; return count } }
    }

    @Test func connectionCloseFromTheClientAndHTTP10AreHonoured() async throws {
        try await withServer([HTTPRoute(path: "/r", body: .text("r"))]) { server, endpoint in
            let results = try await offload { () -> [(RawResponse, Bool)] in
                let close = try RawHTTPConnection(endpoint)
                let closeAnswer = try close.request("GET", "/r", headers: ["Connection: close"])
                let closeEOF = try close.readEOF(within: .seconds(10))

                let old = try RawHTTPConnection(endpoint)
                try old.send("GET /r HTTP/1.0\r\n\r\n")
                let oldAnswer = try old.readResponse()
                let oldEOF = try old.readEOF(within: .seconds(10))

                let oldKeep = try RawHTTPConnection(endpoint)
                try oldKeep.send("GET /r HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                let keepAnswer = try oldKeep.readResponse()
                let keepEOF = try oldKeep.readEOF(within: .milliseconds(200))
                return [(closeAnswer, closeEOF), (oldAnswer, oldEOF), (keepAnswer, keepEOF)]
            }
            #expect(results[0].0.header("Connection") == "close")
            #expect(results[0].1, "EOF after a Connection: close answer")
            #expect(results[1].0.text == "r")
            #expect(results[1].1, "EOF after an HTTP/1.0 answer")
            #expect(results[2].0.header("Connection") == "keep-alive")
            #expect(!results[2].1, "HTTP/1.0 keep-alive stays open")
            #expect(server.requests.map(\.connection) == [1, 2, 3])
        }
    }

    @Test func aRouteSayingConnectionCloseMakesTheServerClose() async throws {
        try await withServer([HTTPRoute(path: "/bye", headers: [HTTPHeader("Connection", "close")])]) { _, endpoint in
            let (answer, eof) = try await offload {
                let connection = try RawHTTPConnection(endpoint)
                return (try connection.request("GET", "/bye"), try connection.readEOF(within: .seconds(10)))
            }
            #expect(answer.headers.filter { $0.name.lowercased() == "connection" }.map(\.value) == ["close"])
            #expect(eof)
        }
    }

    @Test func aRequestIsRecordedEvenWhenTheClientResetsBeforeTheDelayedAnswer() async throws {
        let routes = [HTTPRoute(path: "/slow", status: 202, delay: .milliseconds(400)), HTTPRoute(path: "/ok")]
        try await withServer(routes) { server, endpoint in
            let connection = try await offload { () -> RawHTTPConnection in
                let connection = try RawHTTPConnection(endpoint)
                try connection.send(RawHTTPConnection.requestText("GET", "/slow"))
                return connection
            }
            #expect(await eventually { server.requests.count == 1 })
            connection.socket.reset()
            // The server lets the connection go (its delayed answer finds no client) and goes on.
            #expect(await eventually { server.openConnectionCount == 0 })
            let after = try await offload { try RawHTTPConnection(endpoint).request("GET", "/ok") }
            #expect(after.status == 200)
            let seen = server.requests
            #expect(seen.map(\.path) == ["/slow", "/ok"])
            #expect(seen[0].status == 202)
            #expect(seen[0].connection == 1)
            #expect(await eventually { server.openConnectionCount <= 1 })
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let routes = [
            HTTPRoute(path: "/slow", body: .text("slow"), delay: .milliseconds(500)),
            HTTPRoute(path: "/fast", body: .text("fast")),
            HTTPRoute(path: "/chunks", body: .text("chunked body"), chunked: true),
        ]
        try await withServer(routes) { server, endpoint in
            let texts = try await offload { () -> [String] in
                let connection = try RawHTTPConnection(endpoint)
                try connection.send(["/slow", "/fast", "/chunks", "/fast"].map { RawHTTPConnection.requestText("GET", $0) }.joined())
                return try (0..<4).map { _ in try connection.readResponse().text }
            }
            #expect(texts == ["slow", "fast", "chunked body", "fast"])
            let seen = server.requests
            #expect(seen.map(\.connection) == [1, 1, 1, 1])
            #expect(seen.map(\.reusedConnection) == [false, true, true, true])
            // Recorded on arrival, not when their turn came: all within a moment of each other.
            #expect(seen[3].time - seen[0].time < 400_000_000)
        }
    }

    @Test func aClientThatHalfClosesStillGetsItsAnswersThenTheServerCloses() async throws {
        let routes = [HTTPRoute(path: "/slow", body: .text("slow"), delay: .milliseconds(100)), HTTPRoute(path: "/fast", body: .text("fast"))]
        try await withServer(routes) { _, endpoint in
            let (texts, eof) = try await offload { () -> ([String], Bool) in
                let connection = try RawHTTPConnection(endpoint)
                try connection.send(RawHTTPConnection.requestText("GET", "/slow") + RawHTTPConnection.requestText("GET", "/fast"))
                connection.socket.shutdownWrite()
                let texts = try (0..<2).map { _ in try connection.readResponse().text }
                return (texts, try connection.readEOF(within: .seconds(10)))
            }
            #expect(texts == ["slow", "fast"])
            #expect(eof)
        }
    }

    @Test func bigBodiesStreamAndAClientLeavingMidBodyOnlyEndsItsConnection() async throws {
        let size = 8 << 20
        try await withServer([HTTPRoute(path: "/big", body: .generated(bytes: size))]) { server, endpoint in
            let (kept, body) = try await offload { () -> (RawHTTPConnection, [UInt8]) in
                let connection = try RawHTTPConnection(endpoint)
                return (connection, try connection.request("GET", "/big").body)
            }
            #expect(body.count == size)
            #expect(body == BuiltinServer.generatedBody(bytes: size))

            try await offload {
                let leaving = try RawHTTPConnection(endpoint)
                try leaving.send(RawHTTPConnection.requestText("GET", "/big"))
                _ = try leaving.socket.receive(maximum: 1000)
                leaving.socket.reset()
            }
            #expect(await eventually { server.openConnectionCount == 1 }, "open: \(server.openConnectionCount)")
            kept.socket.close()
            let after = try await offload { try RawHTTPConnection(endpoint).request("HEAD", "/big", headers: ["Connection: close"]) }
            #expect(after.header("Content-Length") == String(size))
            #expect(server.requests.map(\.connection) == [1, 2, 3])
        }
    }

    @Test func stopClosesOpenConnections() async throws {
        let server = BuiltinServer(routes: [HTTPRoute(path: "/")])
        let endpoint = try await server.start()
        let connection = try await offload { () -> RawHTTPConnection in
            let connection = try RawHTTPConnection(endpoint)
            _ = try connection.request("GET", "/")
            return connection
        }
        await server.stop()
        #expect(try await offload { try connection.readEOF(within: .seconds(10)) })
    }

    @Test func requestTimesAreOnTheEventLogTimelineWhenGiven() async throws {
        // The log's time zero is 100 ms before the server starts; the clock stands still after.
        let clock = ManualClock()
        let log = EventLog(clock: clock)
        clock.advance(by: .milliseconds(100))
        let server = BuiltinServer(routes: [HTTPRoute(path: "/")], eventLog: log)
        let endpoint = try await server.start()
        _ = try await offload { try RawHTTPConnection(endpoint).request("GET", "/") }
        await server.stop()
        #expect(server.requests.map(\.time) == [100_000_000])
        #expect(log.events.isEmpty)
    }
}
