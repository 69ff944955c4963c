import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// `netsim serve --events`: every proxy's events in one file, each line naming its proxy, the
/// times of all of them from the API's start.
@Suite("serve's event lines")
struct ProxyEventLinesTests {
    /// An API writing its event lines to a file, and an echo server for its proxies; `body`
    /// gets them and the file's path. The lines the file holds once the API has shut down.
    static func loggedAPI(_ body: (ToxiproxyAPI, LoopbackServer, String) async throws -> Void) async throws -> [[String: Any]] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-serve-events-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let lines = try JSONLinesEventSink(path: path)
        let api = ToxiproxyAPI(threads: 1, eventLines: lines)
        let echo = try LoopbackServer.echo()
        defer { echo.stop() }
        do { try await body(api, echo, path) } catch {
            await api.shutdown()
            throw error
        }
        await api.shutdown()
        lines.flush()
        return try records(path)
    }

    @Test func eachLineNamesItsProxyAndTheTimesShareOneStart() async throws {
        let records = try await Self.loggedAPI { api, echo, path in
            let web = try #require(ToxiproxyAPITests.proxy(await ToxiproxyAPITests.createProxy(api, echo, name: "web")))
            let db = try #require(ToxiproxyAPITests.proxy(await ToxiproxyAPITests.createProxy(api, echo, name: "db")))
            // One connection through each, web's first, then web disabled and enabled (a new relay)
            // and one more: one numbering for every proxy and every relay a proxy has had.
            #expect(try await ToxiproxyAPITests.echo("to web", through: Endpoint(parsing: web.listen)) == Array("to web".utf8))
            #expect(try await ToxiproxyAPITests.echo("to db", through: Endpoint(parsing: db.listen)) == Array("to db".utf8))
            for enabled in [false, true] {
                let update = APIRequest(method: "POST", uri: "/proxies/web", json: #"{"enabled":\#(enabled)}"#)
                #expect(await api.handle(update).status == 200)
            }
            #expect(try await ToxiproxyAPITests.echo("web again", through: Endpoint(parsing: web.listen)) == Array("web again".utf8))
            // A deleted proxy's last events are written as it goes, not at the next flush.
            #expect(await api.handle(APIRequest(method: "DELETE", uri: "/proxies/db")).status == 204)
            let afterDelete = try Self.records(path)
            #expect(afterDelete.contains { $0["proxy"] as? String == "db" && $0["event"] as? String == "listener_closed" }, "\(afterDelete)")
            await api.flushEvents()
        }
        #expect(records.first?["event"] as? String == "seed" && records.first?["seed"] as? Int == 1, "the API's seed first: \(records.first ?? [:])")
        #expect(records.dropFirst().allSatisfy { ["web", "db"].contains($0["proxy"] as? String) }, "every other line names its proxy")
        func first(_ event: String, of proxy: String) -> (t: Double, conn: Int?)? {
            records.first { $0["proxy"] as? String == proxy && $0["event"] as? String == event }
                .map { ($0["t"] as? Double ?? -1, $0["conn"] as? Int) }
        }
        let webListening = try #require(first("listening", of: "web")), dbListening = try #require(first("listening", of: "db"))
        let webOpened = try #require(first("opened", of: "web")), dbOpened = try #require(first("opened", of: "db"))
        let opened = records.filter { $0["event"] as? String == "opened" }.map { "\($0["proxy"] ?? "") \($0["conn"] ?? "")" }
        #expect(opened.sorted() == ["db 2", "web 1", "web 3"], "QA 67: web's relay after the enable numbered from 1 again")
        // One clock: db started after web, and its connection came after web's. (Each log from
        // its own start put both at about 0.)
        #expect(webListening.t < dbListening.t && dbListening.t < webOpened.t && webOpened.t < dbOpened.t,
                "web \(webListening.t) \(webOpened.t), db \(dbListening.t) \(dbOpened.t)")
        #expect(first("listener_closed", of: "web") != nil, "the shutdown's last events are written")
    }

    /// The log says the link once per change, and after a proxy comes back, what applies: each
    /// toxic added logged the old link and then the new one, a fault toxic too; a re-enabled
    /// proxy said nothing of its link, and applied a toxic meant for half its connections to
    /// all of them; `/reset` left that choice in force (QA 67).
    @Test func eachChangeOfLinkIsOneEventAndAProxyThatComesBackSaysItsLink() async throws {
        let records = try await Self.loggedAPI { api, echo, _ in
            #expect(await ToxiproxyAPITests.createProxy(api, echo, name: "a").status == 201)
            func send(_ method: String, _ uri: String, _ json: String) async {
                let status = await api.handle(APIRequest(method: method, uri: uri, json: json)).status
                #expect((200..<300).contains(status), "\(method) \(uri): \(status)")
            }
            func bounce() async {
                await send("POST", "/proxies/a", #"{"enabled":false}"#)
                await send("POST", "/proxies/a", #"{"enabled":true}"#)
            }
            await send("POST", "/proxies/a/toxics", #"{"name":"lat","type":"latency","attributes":{"latency":100}}"#)
            await send("POST", "/proxies/a/toxics/lat", #"{"attributes":{"latency":50}}"#)
            await send("POST", "/proxies/a/toxics", #"{"name":"rp","type":"reset_peer","attributes":{"timeout":100}}"#)
            await bounce()
            await send("POST", "/proxies/a/toxics", #"{"name":"half","type":"latency","toxicity":0.5,"attributes":{"latency":10}}"#)
            await bounce()
            await send("POST", "/reset", "")
        }
        let links = records.compactMap { $0["event"] as? String == "link_changed" ? $0["link"] as? String : nil }
        #expect(links == ["up: unimpaired; down: latency 100ms", "up: unimpaired; down: latency 50ms",
                          "up: unimpaired; down: latency 50ms", "a link chosen per connection",
                          "a link chosen per connection", "one link for all connections: unimpaired"], "\(links)")
        let lifted = records.compactMap { $0["event"] as? String == "fault_lifted" ? $0["fault"] as? String : nil }
        #expect(lifted == ["rst"], "the reset lifts the reset_peer toxic's fault")
    }

    static func records(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }
}
