import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimRunner
import NetsimScenario
import Testing

/// Every in-process driver against netsim's built-in server on loopback: real sockets.
@Suite("In-process drivers", .serialized)
struct DriverTests {
    static let drivers = ["urlsession", "async-http-client", "naive", "resilient"]

    static func client(_ driver: String, timeout: Duration = .seconds(3), pool: Int? = 2, retries: Int? = nil, settings: [String: String] = [:]) -> ClientSpec {
        ClientSpec(driver: driver, timeout: timeout, pool: pool, retries: retries, settings: settings, location: SourceLocation(file: "test", line: 1, column: 1))
    }

    static func make(_ name: String, _ client: ClientSpec) -> any ClientDriver {
        switch name {
        case "urlsession": URLSessionDriver(client: client)
        case "async-http-client": AsyncHTTPClientDriver(client: client)
        case "naive": NaiveDriver(client: client)
        default: ResilientDriver(client: client)
        }
    }

    /// Runs `body` with a built-in server on 127.0.0.1:0 and a driver; stops both after.
    static func withDriver(
        _ name: String, client: ClientSpec? = nil, routes: [HTTPRoute] = DriverTests.routes,
        _ body: (any ClientDriver, Endpoint) async throws -> Void
    ) async throws {
        let server = BuiltinServer(routes: routes)
        let endpoint = try await server.start()
        let driver = make(name, client ?? Self.client(name))
        do {
            try await driver.ready(timeout: .seconds(5))
            try await body(driver, endpoint)
        } catch {
            await driver.shutdown()
            await server.stop()
            throw error
        }
        await driver.shutdown()
        await server.stop()
    }

    static let routes = [
        HTTPRoute(path: "/hello", headers: [HTTPHeader("Content-Type", "text/plain")], body: .text("hello world")),
        HTTPRoute(path: "/big", body: .generated(bytes: 20000)),
        HTTPRoute(path: "/slow", body: .text("late"), delay: .milliseconds(1500)),
    ]

    static func get(_ driver: any ClientDriver, _ endpoint: Endpoint, _ path: String, id: Int = 1) async throws -> DriverResponse {
        try await driver.perform(DriverRequest(id: id, method: "GET", url: "http://\(endpoint)\(path)", headers: [], body: nil))
    }

    @Test(arguments: drivers)
    func getAndNotFound(_ name: String) async throws {
        try await Self.withDriver(name) { driver, endpoint in
            let hello = try await Self.get(driver, endpoint, "/hello")
            #expect(hello.error == nil, "\(hello)")
            #expect(hello.status == 200)
            #expect(hello.body == "hello world")
            #expect(hello.bodySHA256 == NetsimRunnerTestDigest.hex(Array("hello world".utf8)))
            let big = try await Self.get(driver, endpoint, "/big", id: 2)
            #expect(big.bodyLength == 20000)
            #expect(big.bodySHA256 == NetsimRunnerTestDigest.hex(BuiltinServer.generatedBody(bytes: 20000)))
            let missing = try await Self.get(driver, endpoint, "/nowhere", id: 3)
            #expect(missing.status == 404)
            #expect(missing.error == nil)
        }
    }

    @Test(arguments: drivers)
    func refusedConnect(_ name: String) async throws {
        // A port bound and not listening: no other test's server can be handed it.
        let refusing = try RefusingPort()
        let closed = refusing.endpoint
        let driver = Self.make(name, Self.client(name, timeout: .seconds(2), retries: 0))
        let started = ContinuousClock.now
        let response = try await Self.get(driver, closed, "/hello")
        await driver.shutdown()
        #expect(response.error == .refused, "\(response)")
        #expect(response.status == nil)
        #expect(response.errorMessage?.isEmpty == false)
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    /// An answer of bytes that are not HTTP is the client's parse error: kind `other`
    /// (docs/drivers.md), not `closed-before-response` (naive and resilient said so).
    @Test(arguments: drivers)
    func garbageIsOther(_ name: String) async throws {
        let server = try LoopbackServer { socket in
            _ = try? socket.receive(timeout: .seconds(10))
            try? socket.send((0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
            socket.shutdownWrite()
            _ = try? socket.receiveToEnd(timeout: .seconds(5))
        }
        defer { server.stop() }
        let driver = Self.make(name, Self.client(name, timeout: .seconds(3), retries: 0))
        let response = try await Self.get(driver, server.endpoint, "/hello")
        await driver.shutdown()
        #expect(response.error == .other, "\(response)")
    }

    /// An RST in answer to the ClientHello (a captive portal's `tls=reset`) is a reset, as the
    /// exec clients report it; URLSession called it `other` (libcurl's "Recv failure").
    @Test(arguments: drivers)
    func aResetClientHelloIsReset(_ name: String) async throws {
        let server = try LoopbackServer { socket in
            _ = try? socket.receive(timeout: .seconds(10))  // the ClientHello
            socket.reset()
        }
        defer { server.stop() }
        let driver = Self.make(name, Self.client(name, timeout: .seconds(3), retries: 0))
        let response = try await driver.perform(DriverRequest(id: 1, method: "GET", url: "https://\(server.endpoint)/hello", headers: [], body: nil))
        await driver.shutdown()
        #expect(response.error == .reset, "\(response)")
    }

    @Test(arguments: drivers)
    func timeout(_ name: String) async throws {
        try await Self.withDriver(name, client: Self.client(name, timeout: .milliseconds(500), retries: 0)) { driver, endpoint in
            let started = ContinuousClock.now
            let response = try await Self.get(driver, endpoint, "/slow")
            #expect(response.error == .timeout, "\(response)")
            // The response would come at 1.5 s: a timeout error means the client gave up first.
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    /// Two sequential requests go over one kept-alive connection (same local port). URLSession
    /// cannot tell its local port (libcurl keeps it), so it is not in this list.
    @Test(arguments: ["async-http-client", "naive", "resilient"])
    func keepAliveReuse(_ name: String) async throws {
        try await Self.withDriver(name) { driver, endpoint in
            let first = try await Self.get(driver, endpoint, "/hello", id: 1)
            let second = try await Self.get(driver, endpoint, "/hello", id: 2)
            #expect(first.status == 200 && second.status == 200)
            #expect(first.localPort != nil)
            #expect(first.localPort == second.localPort, "\(first.localPort ?? 0) vs \(second.localPort ?? 0)")
        }
    }

    static let incidentRoutes = [
        HTTPRoute(path: "/page", headers: [HTTPHeader("Last-Modified", "Mon, 01 Jan 2001 00:00:00 GMT")], body: .text("error page")),
        HTTPRoute(path: "/fresh", headers: [HTTPHeader("Cache-Control", "max-age=60")], body: .text("v1")),
        HTTPRoute(path: "/hotspot-detect.html", body: .text("<html>Log in to the hotel Wi-Fi</html>")),
        HTTPRoute(path: "/go", status: 302, headers: [HTTPHeader("Location", "http://portal.example/login")]),
        HTTPRoute(path: "/profile", headers: [HTTPHeader("Content-Type", "text/html")], body: .text("<html>Log in to the hotel Wi-Fi</html>")),
        // The portal answers the connectivity probe too (an open network answers 204).
        HTTPRoute(path: "/generate_204", body: .text("<html>Log in to the hotel Wi-Fi</html>")),
    ]

    /// Naive caches by heuristic freshness (old Last-Modified, no Cache-Control); resilient
    /// only with an explicit max-age.
    @Test func cachingPolicies() async throws {
        for name in ["naive", "resilient"] {
            let server = BuiltinServer(routes: Self.incidentRoutes)
            let endpoint = try await server.start()
            let driver = Self.make(name, Self.client(name))
            for id in 1...2 { _ = try await Self.get(driver, endpoint, "/page", id: id) }
            for id in 3...4 { _ = try await Self.get(driver, endpoint, "/fresh", id: id) }
            let seen = server.requests
            await driver.shutdown()
            await server.stop()
            #expect(seen.filter { $0.path == "/page" }.count == (name == "naive" ? 1 : 2), "\(name)")
            #expect(seen.filter { $0.path == "/fresh" }.count == 1, "\(name)")
        }
    }

    /// Resilient reports a captive portal; naive believes the login page.
    @Test func captivePortal() async throws {
        for name in ["naive", "resilient"] {
            try await Self.withDriver(name, routes: Self.incidentRoutes) { driver, endpoint in
                let probe = try await Self.get(driver, endpoint, "/hotspot-detect.html", id: 1)
                let redirect = try await Self.get(driver, endpoint, "/go", id: 2)
                let page = try await driver.perform(DriverRequest(
                    id: 3, method: "GET", url: "http://\(endpoint)/profile", headers: [HTTPHeader("Accept", "application/json")], body: nil))
                if name == "naive" {
                    #expect(probe.status == 200 && redirect.status == 302 && page.status == 200)
                } else {
                    for answer in [probe, redirect, page] {
                        #expect(answer.error == .other && answer.errorMessage?.hasPrefix("captive portal: ") == true, "\(answer)")
                    }
                    #expect(page.errorMessage?.contains("generate_204 answered 200 instead of 204") == true, "\(page)")
                }
            }
        }
    }

    /// A redirect to another host, or an HTML answer, is not a portal when the connectivity
    /// probe gets an open network's 204 (the built-in server answers it so by default).
    @Test func resilientBelievesAnswersTheProbeVouchesFor() async throws {
        let routes = [
            HTTPRoute(path: "/moved", status: 302, headers: [HTTPHeader("Location", "http://cdn.example/moved")]),
            HTTPRoute(path: "/page", headers: [HTTPHeader("Content-Type", "text/html")], body: .text("<html>a real page</html>")),
        ]
        try await Self.withDriver("resilient", routes: routes) { driver, endpoint in
            let moved = try await Self.get(driver, endpoint, "/moved", id: 1)
            #expect(moved.status == 302 && moved.error == nil, "\(moved)")
            let page = try await driver.perform(DriverRequest(
                id: 2, method: "GET", url: "http://\(endpoint)/page", headers: [HTTPHeader("Accept", "application/json")], body: nil))
            #expect(page.status == 200 && page.error == nil, "\(page)")
            #expect(await driver.log.contains("answered 204: no portal"))
        }
    }

    /// Resilient waits as long as Retry-After says (and retries); naive retries a 5xx at once.
    @Test func retryAfterIsHonouredByResilientOnly() async throws {
        let routes = [HTTPRoute(path: "/busy", status: 503, headers: [HTTPHeader("Retry-After", "1")], body: .text("busy"))]
        for name in ["naive", "resilient"] {
            let server = BuiltinServer(routes: routes)
            let endpoint = try await server.start()
            let driver = Self.make(name, Self.client(name, retries: 2))
            let response = try await Self.get(driver, endpoint, "/busy")
            let times = server.requests.map(\.time)
            await driver.shutdown()
            await server.stop()
            #expect(response.status == 503)
            #expect(times.count == 3, "\(name): one request and two retries")
            let gaps = zip(times.dropFirst(), times).map { Double($0 - $1) / 1e9 }
            if name == "resilient" {
                #expect(gaps.allSatisfy { $0 >= 0.95 }, "Retry-After: 1 honoured: \(gaps)")
            } else {
                #expect(gaps.allSatisfy { $0 < 0.5 }, "naive retries at once: \(gaps)")
            }
        }
    }

    /// The reference clients give each attempt the whole `timeout` (docs/drivers.md): resilient's
    /// Retry-After waits go past it (outage-503 counts on that), naive's retries add up.
    @Test func theReferenceClientsTimeEachAttempt() async throws {
        let busy = HTTPRoute(path: "/busy", status: 503, headers: [HTTPHeader("Retry-After", "1")], body: .text("busy"))
        let slow = HTTPRoute(path: "/slow", body: .text("late"), delay: .milliseconds(1500))
        let server = BuiltinServer(routes: [busy, slow])
        let endpoint = try await server.start()
        let resilient = Self.make("resilient", Self.client("resilient", timeout: .milliseconds(1200), retries: 2))
        let answer = try await Self.get(resilient, endpoint, "/busy")
        await resilient.shutdown()
        let naive = Self.make("naive", Self.client("naive", timeout: .milliseconds(400), retries: 1))
        let started = ContinuousClock.now
        let late = try await Self.get(naive, endpoint, "/slow", id: 2)
        let naiveTook = ContinuousClock.now - started
        await naive.shutdown()
        let busyTimes = server.requests.filter { $0.path == "/busy" }.map(\.time)
        let slowRequests = server.requests.filter { $0.path == "/slow" }.count
        await server.stop()
        #expect(answer.status == 503 && busyTimes.count == 3, "\(answer), \(busyTimes.count) requests")
        if let first = busyTimes.first, let last = busyTimes.last {
            #expect(Double(last - first) / 1e9 >= 1.9, "two Retry-After waits of 1 s under a 1.2 s timeout")
        }
        #expect(late.error == .timeout && slowRequests == 2, "\(late), \(slowRequests) requests")
        #expect(naiveTook >= .milliseconds(800), "two attempts of 400 ms each: \(naiveTook)")
    }

    /// A server that resets every connection as it accepts it: the reset can land before the
    /// driver looks at its new connection, and a closed channel has no address. The log said
    /// "reset on port 0"; the port is read as the connect completes, and never made up.
    @Test(arguments: ["naive", "resilient"])
    func aConnectionResetAtOnceIsNeverPortZero(_ name: String) async throws {
        let server = try LoopbackServer { socket in socket.reset() }
        defer { server.stop() }
        let driver = Self.make(name, Self.client(name, timeout: .seconds(2), pool: 0, retries: 0))
        for id in 1...20 {
            let response = try await Self.get(driver, server.endpoint, "/hello", id: id)
            #expect(response.error == .reset, "\(response)")
        }
        let log = await driver.log
        await driver.shutdown()
        #expect(!log.contains("port 0"), "\(log)")
    }

    @Test func urlSessionReportsNoLocalPort() async throws {
        try await Self.withDriver("urlsession") { driver, endpoint in
            let response = try await Self.get(driver, endpoint, "/hello")
            #expect(response.status == 200)
            #expect(response.localPort == nil)
        }
    }
}
