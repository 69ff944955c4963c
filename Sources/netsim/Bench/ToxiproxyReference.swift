import Foundation
import NIOCore
import NIOHTTP1
import NetsimRelay
import NetsimLoopback

/// A `toxiproxy-server` the bench measures beside the relay: started for one part on a free
/// loopback port with Toxiproxy's own flags (`-host 127.0.0.1 -port P`), driven through its HTTP
/// API (`POST /proxies`, `POST /proxies/NAME/toxics`), stopped when the part ends.
///
/// Which binary: `netsim bench --toxiproxy PATH`, else the first `toxiproxy-server` on PATH, else
/// none — the parts then say "not installed", as they do for socat.
// `@unchecked Sendable`: used by the one benchmark task that started it; `proxies` only there.
final class ToxiproxyReference: @unchecked Sendable {
    /// A toxic as Toxiproxy's API takes it: `type`, `stream` (upstream or downstream), attributes.
    struct Toxic: Sendable {
        var type: String
        var stream: String
        var attributes: [String: Int]

        static func latency(_ milliseconds: Int, stream: String) -> Toxic {
            Toxic(type: "latency", stream: stream, attributes: ["latency": milliseconds, "jitter": 0])
        }

        /// Toxiproxy's rate is in KB/s of 1000 bytes (its bandwidth toxic sleeps len × 1 ms / rate).
        static func bandwidth(kilobytesPerSecond: Int) -> Toxic {
            Toxic(type: "bandwidth", stream: "downstream", attributes: ["rate": kilobytesPerSecond])
        }
    }

    let executable: String
    /// What `GET /version` answered, for the rows' labels.
    let version: String
    private let child: ChildProcess
    private let apiPort: Int
    private var proxies = 0

    /// The binary to compare with, if any: `explicit` (from `--toxiproxy`) or `toxiproxy-server` on PATH.
    static func executable(explicit: String?) -> String? {
        explicit ?? ProcFS.findOnPath("toxiproxy-server")
    }

    /// Starts `executable` and waits until its API answers, at most `readyWithin` seconds.
    ///
    /// The port is one that was free a moment ago: another process can take it before the
    /// server listens (a test suite's servers pick ports all the time), and then something
    /// else answers. CI saw `POST /proxies` answered 404 by another test's server. So the
    /// server must answer `GET /version` with 200; otherwise it is stopped and started again
    /// on a fresh port, three times at most.
    init(executable: String, readyWithin: Double = 10) throws {
        self.executable = executable
        var problems: [String] = []
        for _ in 1...3 {
            let port = try freeLoopbackPort()
            let child = try ChildProcess(
                name: "toxiproxy-server", executable: executable, arguments: ["-host", "127.0.0.1", "-port", "\(port)"],
                captureStandardError: false)
            do {
                version = try Self.version(port: port, within: readyWithin, while: { child.isRunning })
                apiPort = port
                self.child = child
                return
            } catch {
                child.stop()
                problems.append("127.0.0.1:\(port): \(error)")
            }
        }
        throw RuntimeError("toxiproxy-server (\(executable)) did not answer: \(problems.joined(separator: "; "))")
    }

    /// What `GET /version` answers on `port` once the server listens there.
    static func version(port: Int, within seconds: Double, while starting: () -> Bool) throws -> String {
        try connectLoopback(port, retryingFor: seconds, while: starting).close()
        let (status, text) = try request("GET", "/version", port: port)
        guard status == 200, starting() else {
            throw RuntimeError("GET /version answered \(status) (another server on the port?): \(text.prefix(200))")
        }
        // 2.x answers {"version": "…"}; older releases a bare string.
        let body = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let json = try? JSONSerialization.jsonObject(with: Data(body.utf8), options: [.fragmentsAllowed])
        return ((json as? [String: Any])?["version"] as? String) ?? (json as? String) ?? body
    }

    /// Starts `executable` and makes one proxy per entry (``proxy(to:toxics:)``), off the
    /// cooperative pool: all of it blocks. Stops the server again if a proxy cannot be made.
    static func start(executable: String, proxies: [(upstream: Int, toxics: [Toxic])]) async throws
        -> (reference: ToxiproxyReference, ports: [Int]) {
        try await offload {
            let reference = try ToxiproxyReference(executable: executable)
            do {
                return (reference, try proxies.map { try reference.proxy(to: $0.upstream, toxics: $0.toxics) })
            } catch {
                reference.stop()
                throw error
            }
        }
    }

    /// How the rows name it: `toxiproxy-server 2.4.0`.
    var label: String { "toxiproxy-server \(version)" }

    /// Creates a proxy from a free loopback port to 127.0.0.1:`upstreamPort` with `toxics`, and
    /// returns the port it listens on.
    func proxy(to upstreamPort: Int, toxics: [Toxic] = []) throws -> Int {
        proxies += 1
        let name = "netsim_bench_\(proxies)"
        let created = try call("POST", "/proxies", [
            "name": name, "listen": "127.0.0.1:0", "upstream": "127.0.0.1:\(upstreamPort)", "enabled": true,
        ])
        guard let listen = created["listen"] as? String, let colon = listen.lastIndex(of: ":"),
              let port = Int(listen[listen.index(after: colon)...]) else {
            throw RuntimeError("toxiproxy-server's new proxy has no listen address: \(created)")
        }
        for (index, toxic) in toxics.enumerated() {
            _ = try call("POST", "/proxies/\(name)/toxics", [
                "name": "\(toxic.type)_\(toxic.stream)_\(index)", "type": toxic.type, "stream": toxic.stream,
                "toxicity": 1.0, "attributes": toxic.attributes,
            ])
        }
        return port
    }

    func stop() { child.stop() }

    /// One API call whose answer must be 2xx with a JSON object.
    private func call(_ method: String, _ path: String, _ body: [String: Any]) throws -> [String: Any] {
        let (status, text) = try Self.request(method, path, port: apiPort, body: try JSONSerialization.data(withJSONObject: body))
        guard (200..<300).contains(status) else {
            throw RuntimeError("toxiproxy-server answered \(method) \(path) with \(status): \(text)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw RuntimeError("toxiproxy-server answered \(method) \(path) with no JSON object: \(text)")
        }
        return object
    }

    /// An HTTP/1.1 request with `Connection: close`; the answer's status and body.
    private static func request(_ method: String, _ path: String, port: Int, body: Data = Data()) throws -> (status: Int, body: String) {
        let socket = try connectLoopback(port)
        defer { socket.close() }
        try socket.send("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: netsim-bench\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n")
        if !body.isEmpty { try socket.send(Array(body)) }
        return try answer(to: method, path, try socket.receiveToEnd(timeout: .seconds(30)))
    }

    /// The status and body of a whole answer read to the connection's close, decoded by
    /// NIOHTTP1 as the relay observes HTTP (Go's server chunks larger bodies). An answer cut
    /// before its end is an error, not a shorter body.
    static func answer(to method: String, _ path: String, _ bytes: [UInt8]) throws -> (status: Int, body: String) {
        let decoder = HTTPStreamDecoder<HTTPClientResponsePart>.responses()
        decoder.requestSent(HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: path))
        var status: Int?, body: [UInt8] = [], ended = false
        let collect = { (part: HTTPClientResponsePart) in
            switch part {
            case .head(let head): status = Int(head.status.code)
            case .body(let buffer): body += buffer.readableBytesView
            case .end: ended = true
            }
        }
        do {
            try decoder.feed(ByteBuffer(bytes: bytes), collect)
            try decoder.finish(collect)
        } catch {
            throw RuntimeError("toxiproxy-server's answer to \(method) \(path) is cut or not HTTP/1.1: \(error)")
        }
        guard let status, ended else {
            throw RuntimeError("toxiproxy-server's answer to \(method) \(path) ends before its end (\(bytes.count) bytes)")
        }
        return (status, String(decoding: body, as: UTF8.self))
    }
}
