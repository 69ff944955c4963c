import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import Testing

@Suite struct ScratchDebug {
    @Test(arguments: 0..<12) func leaving(_ i: Int) async throws {
        let size = 8 << 20
        try await withServer([HTTPRoute(path: "/big", body: .generated(bytes: size))]) { server, endpoint in
            let kept = try await offload { () -> RawHTTPConnection in
                let connection = try RawHTTPConnection(endpoint)
                _ = try connection.request("GET", "/big").body
                return connection
            }
            let got = try await offload { () -> Int in
                let leaving = try RawHTTPConnection(endpoint)
                try leaving.send(RawHTTPConnection.requestText("GET", "/big"))
                let n = try leaving.socket.receive(maximum: 1000).count
                leaving.socket.reset()
                return n
            }
            let ok = await eventually(timeout: .seconds(3)) { server.openConnectionCount == 1 }
            if !ok { print("DEBUG \(i): open=\(server.openConnectionCount) got=\(got)") }
            #expect(ok)
            kept.socket.close()
        }
    }
}
