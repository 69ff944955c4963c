import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import Testing

@Suite("Built-in HTTP server: routes and responses")
struct BuiltinServerResponseTests {
    @Test func routesMatchByExactPathAndMethodFirstMatchWinsAndUnknownPathsGet404() async throws {
        let routes = [
            HTTPRoute(method: "GET", path: "/a", body: .text("get a")),
            HTTPRoute(method: "POST", path: "/a", status: 201, body: .text("posted a")),
            HTTPRoute(path: "/b", body: .text("any b")),
            HTTPRoute(path: "/b", body: .text("shadowed")),
        ]
        try await withServer(routes) { server, endpoint in
            let answers = try await offload { () -> [RawResponse] in
                let connection = try RawHTTPConnection(endpoint)
                return try [
                    connection.request("GET", "/a?x=1&y=2"),
                    connection.request("POST", "/a", body: "hello"),
                    connection.request("PUT", "/b", body: ""),
                    connection.request("GET", "/a/"),
                    connection.request("GET", "/nowhere"),
                ]
            }
            #expect(answers.map(\.status) == [200, 201, 200, 404, 404])
            #expect(answers.map(\.text)[0...2] == ["get a", "posted a", "any b"])
            #expect(answers[4].text.contains("/nowhere"))
            #expect(answers[4].header("Content-Type")?.hasPrefix("text/plain") == true)
            let seen = server.requests
            #expect(seen.map(\.path) == ["/a", "/a", "/b", "/a/", "/nowhere"])
            #expect(seen.map(\.method) == ["GET", "POST", "PUT", "GET", "GET"])
            #expect(seen.map(\.status) == [200, 201, 200, 404, 404])
        }
    }

    @Test func headersComeInOrderWithDateAndContentLengthAndTheStandardReasonPhrase() async throws {
        let routes = [
            HTTPRoute(path: "/made", status: 201, headers: [
                HTTPHeader("X-First", "1"), HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Last", "3"),
                HTTPHeader("Content-Length", "999"),
            ], body: .text("{\"ok\":true}")),
            HTTPRoute(path: "/down", status: 503, body: .text("later")),
        ]
        try await withServer(routes) { _, endpoint in
            let (made, down) = try await offload {
                let connection = try RawHTTPConnection(endpoint)
                return (try connection.request("GET", "/made"), try connection.request("GET", "/down"))
            }
            #expect(made.statusLine == "HTTP/1.1 201 Created")
            #expect(down.statusLine == "HTTP/1.1 503 Service Unavailable")
            #expect(made.header("Content-Length") == "11")
            #expect(made.headers.filter { $0.name.lowercased() == "content-length" }.count == 1)
            #expect(made.text == "{\"ok\":true}")
            #expect(made.header("Date")?.hasSuffix(" GMT") == true)
            let routeHeaders = made.headers.map(\.name).filter { $0.hasPrefix("X-") || $0 == "Content-Type" }
            #expect(routeHeaders == ["X-First", "Content-Type", "X-Last"])
            #expect(made.header("Connection") == nil)
        }
    }

    @Test func generatedBodiesHaveTheirLengthAndAreTheSameBytesEveryTime() async throws {
        let size = 200_000  // more than one 64 KiB block
        try await withServer([HTTPRoute(path: "/big", body: .generated(bytes: size)), HTTPRoute(path: "/small", body: .generated(bytes: 10))]) { _, endpoint in
            let (first, second, small) = try await offload {
                let connection = try RawHTTPConnection(endpoint)
                return (try connection.request("GET", "/big"), try connection.request("GET", "/big"), try connection.request("GET", "/small"))
            }
            #expect(first.header("Content-Length") == String(size))
            #expect(first.body.count == size)
            #expect(first.body == second.body)
            #expect(first.body == BuiltinServer.generatedBody(bytes: size))
            #expect(small.body == BuiltinServer.generatedBody(bytes: 10))
        }
        #expect(BuiltinServer.generatedBody(bytes: 5000) == BuiltinServer.generatedBody(bytes: 5000))
        #expect(BuiltinServer.generatedBody(bytes: 5000) != Array(BuiltinServer.generatedBody(bytes: 5001).prefix(5000)))
        #expect(Set(BuiltinServer.generatedBody(bytes: 5000)).count > 200)
        #expect(BuiltinServer.generatedBody(bytes: 0).isEmpty)
    }

    @Test func chunkedBodiesGoOutInSeveralChunks() async throws {
        let text = String(repeating: "netsim ", count: 30)
        let routes = [
            HTTPRoute(path: "/text", body: .text(text), chunked: true),
            HTTPRoute(path: "/gen", body: .generated(bytes: 150_000), chunked: true),
        ]
        try await withServer(routes) { _, endpoint in
            let (small, big, head) = try await offload {
                let connection = try RawHTTPConnection(endpoint)
                return (try connection.request("GET", "/text"), try connection.request("GET", "/gen"), try connection.request("HEAD", "/text"))
            }
            #expect(small.header("Transfer-Encoding") == "chunked")
            #expect(small.header("Content-Length") == nil)
            #expect(small.text == text)
            #expect(small.chunkCount >= 2)
            #expect(big.body == BuiltinServer.generatedBody(bytes: 150_000))
            #expect(big.chunkCount >= 3)
            #expect(head.header("Transfer-Encoding") == "chunked")
        }
    }

    /// A chunked body larger than the channel's write buffer, to a client that reads late: the
    /// flush of each chunk can make the channel writable again, which pumped the body from
    /// inside the pump. The inner pump wrote pieces the outer one wrote again and ended the
    /// answer, and the outer one then wrote body after the end: NIO's precondition killed the
    /// process (SIGILL) at 256 KiB and above.
    @Test func aLargeChunkedBodyToALateReaderArrivesWhole() async throws {
        try await withServer([HTTPRoute(path: "/gen", body: .generated(bytes: 2 * 1024 * 1024), chunked: true)]) { _, endpoint in
            let answers = try await offload { () -> [RawResponse] in
                let connection = try RawHTTPConnection(endpoint)
                try connection.send("GET /gen HTTP/1.1\r\nHost: x\r\n\r\n")
                Thread.sleep(forTimeInterval: 0.3)  // the server fills the socket and its buffer
                return [try connection.readResponse(), try connection.request("GET", "/gen")]
            }
            for answer in answers {
                #expect(answer.status == 200)
                #expect(answer.body == BuiltinServer.generatedBody(bytes: 2 * 1024 * 1024))
            }
        }
    }

    @Test func headRequestsGetTheHeadWithoutABody() async throws {
        try await withServer([HTTPRoute(path: "/x", body: .text("twelve bytes"))]) { _, endpoint in
            let (head, get) = try await offload {
                let connection = try RawHTTPConnection(endpoint)
                // The GET after the HEAD parses only if the HEAD answer carried no body bytes.
                return (try connection.request("HEAD", "/x"), try connection.request("GET", "/x"))
            }
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "12")
            #expect(get.text == "twelve bytes")
        }
    }

    @Test func delayHoldsTheHeadBackForAtLeastTheDelay() async throws {
        try await withServer([HTTPRoute(path: "/slow", body: .text("late"), delay: .milliseconds(300))]) { _, endpoint in
            let (elapsed, text) = try await offload { () -> (Duration, String) in
                let connection = try RawHTTPConnection(endpoint)
                let started = ContinuousClock.now
                let text = try connection.request("GET", "/slow").text
                return (ContinuousClock.now - started, text)
            }
            #expect(elapsed >= .milliseconds(300))
            #expect(text == "late")
        }
    }

    @Test func aDelayedAnswerDoesNotHoldUpOtherConnections() async throws {
        // If the delay blocked the (single) event loop, /fast would wait the full 10 s.
        let routes = [HTTPRoute(path: "/hang", delay: .seconds(10)), HTTPRoute(path: "/fast", body: .text("fast"))]
        try await withServer(routes) { _, endpoint in
            let (elapsed, text, hangAnswered) = try await offload { () -> (Duration, String, Bool) in
                let hanging = try RawHTTPConnection(endpoint)
                try hanging.send(RawHTTPConnection.requestText("GET", "/hang"))
                let started = ContinuousClock.now
                let text = try RawHTTPConnection(endpoint).request("GET", "/fast").text
                let elapsed = ContinuousClock.now - started
                let hangAnswered = (try? hanging.socket.receive(timeout: .milliseconds(1)))?.isEmpty == false
                return (elapsed, text, hangAnswered)
            }
            #expect(text == "fast")
            #expect(elapsed < .seconds(5))
            #expect(!hangAnswered)
        }
    }

    @Test func postBodyBytesAreRecordedForLengthAndChunkedUploads() async throws {
        try await withServer([HTTPRoute(method: "POST", path: "/upload", status: 204)]) { server, endpoint in
            let responses = try await offload { () -> [RawResponse] in
                let connection = try RawHTTPConnection(endpoint)
                let first = try connection.request("POST", "/upload", body: String(repeating: "x", count: 1234))
                try connection.send("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n")
                return [first, try connection.readResponse()]
            }
            #expect(responses.map(\.status) == [204, 204])
            #expect(server.requests.map(\.bodyBytes) == [1234, 8])
        }
    }

    @Test func aClientExpecting100ContinueIsToldToGoOn() async throws {
        try await withServer([HTTPRoute(method: "POST", path: "/upload", status: 201)]) { server, endpoint in
            let (interim, final) = try await offload { () -> (RawResponse, RawResponse) in
                let connection = try RawHTTPConnection(endpoint)
                try connection.send("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
                let interim = try connection.readResponse(method: "HEAD")  // head only
                try connection.send("body")
                return (interim, try connection.readResponse())
            }
            #expect(interim.statusLine == "HTTP/1.1 100 Continue")
            #expect(final.status == 201)
            #expect(server.requests.map(\.bodyBytes) == [4])
        }
    }
}
