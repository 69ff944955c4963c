import Foundation
import NIOConcurrencyHelpers
import NetsimCore
import Testing
@testable import NetsimService

/// What the Toxiproxy API tells its user beyond the JSON (QA 59).
@Suite("Toxiproxy API: notices and populate")
struct ToxiproxyAPINoticeTests {
    /// `listen: ":PORT"` is loopback here, not every address as in Toxiproxy: said.
    @Test func aListenWithoutAHostIsSaidToBeLoopbackOnly() async throws {
        let notices = NIOLockedValueBox<[String]>([])
        let api = ToxiproxyAPI(threads: 1, warn: { message, exposes in notices.withLockedValue { $0.append("\(exposes) \(message)") } })
        let response = await api.handle(APIRequest(method: "POST", uri: "/proxies", json: #"{"name":"r","listen":":0","upstream":"127.0.0.1:9"}"#))
        await api.shutdown()
        #expect(response.status == 201, "\(response.text)")
        #expect(notices.withLockedValue { $0 } == ["false proxy r: listen :0 is taken as 127.0.0.1:0, loopback only (Toxiproxy listens on every address); write 0.0.0.0:0 for that"])
    }

    /// A name given twice in one populate is refused before anything changes (it replaced its
    /// own first proxy, which the answer still listed).
    @Test func populateRefusesANameGivenTwice() async throws {
        let api = ToxiproxyAPI(threads: 1)
        let body = #"[{"name":"d","listen":"127.0.0.1:0","upstream":"127.0.0.1:1"},{"name":"d","listen":"127.0.0.1:0","upstream":"127.0.0.1:2"}]"#
        let response = await api.handle(APIRequest(method: "POST", uri: "/populate", json: body))
        let proxies = await api.handle(APIRequest(method: "GET", uri: "/proxies"))
        await api.shutdown()
        #expect(response.status == 400 && response.text.contains("populate names the proxy d twice"), "\(response.text)")
        #expect(proxies.text == "{}\n", "nothing was created: \(proxies.text)")
    }
}
