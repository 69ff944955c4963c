import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// The `outage` and `portal` toxics, through the API server over HTTP and real sockets.
@Suite("outage and portal toxics")
struct StandInToxicTests {
    typealias H = HTTPTestSupport

    /// An API server on a free port with one proxy `web` to a keep-alive HTTP upstream.
    static func withProxy(_ body: (Endpoint, Endpoint, H.Upstream) async throws -> Void) async throws {
        let upstream = try H.Upstream()
        let server = APIServer(api: ToxiproxyAPI(threads: 1))
        do {
            let api = try await server.start(host: "127.0.0.1", port: 0)
            let (status, created) = try await H.api(api, "POST", "/proxies",
                                                    json: #"{"name":"web","listen":"127.0.0.1:0","upstream":"\#(upstream.endpoint)"}"#)
            #expect(status == 201, "\(created)")
            let proxy = try JSONDecoder().decode(ProxyJSON.self, from: Data(created.utf8))
            try await body(api, try Endpoint(parsing: proxy.listen), upstream)
        } catch {
            await server.stop()
            upstream.stop()
            throw error
        }
        await server.stop()
        upstream.stop()
    }

    @Test("outage: 503 with Retry-After on new and open connections; deleting it restores the upstream")
    func outage() async throws {
        try await Self.withProxy { api, proxy, upstream in
            let live = try BlockingSocket.connect(to: proxy)
            defer { live.close() }
            let before = try await offload { try H.get(live, "/before") }
            #expect(before.status == 200 && before.body == "upstream")

            let (added, toxic) = try await H.api(api, "POST", "/proxies/web/toxics", json: #"{"type":"outage"}"#)
            #expect(added == 200, "\(toxic)")
            #expect(toxic.contains(#""kind":"503""#) && toxic.contains(#""name":"outage_downstream""#), "\(toxic)")

            let (fresh, open) = try await offload { () -> (H.Response, H.Response) in
                let socket = try BlockingSocket.connect(to: proxy)
                defer { socket.close() }
                return (try H.get(socket, "/during"), try H.get(live, "/during-live"))
            }
            for response in [fresh, open] {
                #expect(response.status == 503, "\(response.head)")
                #expect(response.header("Retry-After") == "2", "\(response.head)")
            }
            #expect(upstream.requests == 1, "the upstream saw only the request before the outage")

            // PATCH changes the answer in place.
            let (patched, changed) = try await H.api(api, "PATCH", "/proxies/web/toxics/outage_downstream", json: #"{"attributes":{"kind":"500"}}"#)
            #expect(patched == 200 && changed.contains(#""kind":"500""#), "\(changed)")
            #expect(try await offload { try H.get(live, "/patched") }.status == 500)

            #expect(try await H.api(api, "DELETE", "/proxies/web/toxics/outage_downstream").0 == 204)
            let (after, afterLive) = try await offload { () -> (H.Response, H.Response) in
                let socket = try BlockingSocket.connect(to: proxy)
                defer { socket.close() }
                return (try H.get(socket, "/after"), try H.get(live, "/after-live"))
            }
            #expect(after.status == 200 && after.body == "upstream")
            #expect(afterLive.status == 200 && afterLive.body == "upstream")
            #expect(upstream.requests == 3)
        }
    }

    @Test("portal: plain HTTP gets the 302 to the login page, a ClientHello a reset; deleting it is the login")
    func portal() async throws {
        try await Self.withProxy { api, proxy, upstream in
            let (added, toxic) = try await H.api(api, "POST", "/proxies/web/toxics", json: #"{"type":"portal","stream":"upstream"}"#)
            #expect(added == 200, "\(toxic)")
            #expect(toxic.contains(#""answer":"redirect""#) && toxic.contains(#""tls":"reset""#), "\(toxic)")

            let held = try BlockingSocket.connect(to: proxy)
            defer { held.close() }
            let redirect = try await offload { try H.get(held, "/api/profile", host: "api.example.test") }
            #expect(redirect.status == 302, "\(redirect.head)")
            let location = redirect.header("Location") ?? ""
            #expect(location.hasPrefix("http://portal.netsim.test/login"), "\(location)")

            let tls = try await offload { () -> Result<[UInt8], SocketFailure> in
                let socket = try BlockingSocket.connect(to: proxy)
                defer { socket.close() }
                // The start of a TLS ClientHello: handshake record, TLS 1.0 record version.
                try socket.send([0x16, 0x03, 0x01, 0x00, 0x2a, 0x01, 0x00, 0x00, 0x26, 0x03, 0x03] + [UInt8](repeating: 7, count: 32))
                do { return .success(try socket.receive(timeout: ForwardProxyTests.patience)) } catch let failure as SocketFailure { return .failure(failure) }
            }
            #expect(tls == .failure(.reset), "\(tls)")
            #expect(upstream.requests == 0)

            #expect(try await H.api(api, "DELETE", "/proxies/web/toxics/portal_upstream").0 == 204)
            let (fresh, afterLogin) = try await offload { () -> (H.Response, H.Response) in
                let socket = try BlockingSocket.connect(to: proxy)
                defer { socket.close() }
                return (try H.get(socket, "/after"), try H.get(held, "/after-login"))
            }
            #expect(fresh.status == 200 && fresh.body == "upstream")
            #expect(afterLogin.status == 200 && afterLogin.body == "upstream", "the connection the portal held goes upstream after the login")
        }
    }

    @Test("portal toxicity: connections are chosen from the seed, the others reach the upstream")
    func portalToxicity() async throws {
        try await Self.withProxy { api, proxy, _ in
            let (added, _) = try await H.api(api, "POST", "/proxies/web/toxics", json: #"{"type":"portal","toxicity":0.5,"attributes":{"answer":"page"}}"#)
            #expect(added == 200)
            let statuses = try await offload { () -> [Int] in
                try (0..<12).map { _ in
                    let socket = try BlockingSocket.connect(to: proxy)
                    defer { socket.close() }
                    let response = try H.get(socket)
                    return response.body == "upstream" ? 0 : response.status
                }
            }
            #expect(statuses.contains(0) && statuses.contains(200), "\(statuses)")
            #expect(statuses.allSatisfy { $0 == 0 || $0 == 200 }, "\(statuses)")
        }
    }
}
