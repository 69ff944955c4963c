import Foundation
import NetsimCore
import NetsimFaults
import NetsimHTTP
import NetsimScenario
import NIOConcurrencyHelpers

/// One of netsim's in-process drivers behind the exec protocol (docs/drivers.md), on stdin and
/// stdout: `netsim exec-client --client naive`. A packet link's client must run inside its
/// network namespace, and a namespace is a process's (or a thread's) — a library's sockets,
/// made on threads it owns, cannot be moved there from netsim's process. Run as its own process
/// under `ip netns exec`, the driver's every socket is made inside; the runner talks to it as to
/// any exec client, so judging, timing and reports do not change.
public enum ExecClientServer {
    /// Serves until stdin ends: the `config` line, `hello`, then one answer per `request` line
    /// (several at once when the runner sends them in parallel). The driver's log goes to stderr
    /// at the end, where the runner keeps a client's log.
    public static func serve(driver name: String, seed: UInt64, caFile: String?) async throws {
        var lines = StandardInputLines().stream.makeAsyncIterator()
        guard let first = await lines.next() else { return }
        guard case .config(let config)? = try? JSONDecoder().decode(ExecCommand.self, from: Data(first.utf8)) else {
            throw RunnerError.invalid("the first line was not the exec protocol's config line")
        }
        let client = ClientSpec(
            driver: name, timeout: config.timeout.map { .seconds($0) }, connectTimeout: config.connectTimeout.map { .seconds($0) },
            pool: config.pool, retries: config.retries, settings: config.settings, location: SourceLocation(file: "exec-client", line: 1, column: 1))
        guard let driver = DriverFactory.makeInProcess(name, client: client, seed: seed, caFile: caFile) else {
            throw RunnerError.invalid("'\(name)' is not an in-process driver; in-process drivers: \(DriverFactory.inProcess.joined(separator: ", "))")
        }
        try await driver.ready(timeout: .seconds(20))
        let output = AnswerWriter()
        output.write(["type": "hello", "name": driver.name, "protocol": ExecHello.current])
        await withTaskGroup(of: Void.self) { group in
            while let line = await lines.next() {
                guard case .request(let request)? = try? JSONDecoder().decode(ExecCommand.self, from: Data(line.utf8)) else { continue }
                // The driver's log names a scenario's request by its tag, as in a relay run.
                let tag = request.headers.first { $0.key.caseInsensitiveCompare(RequestTag.header) == .orderedSame }?.value
                group.addTask {
                    let response = try? await driver.perform(DriverRequest(
                        id: request.id, method: request.method, url: request.url,
                        headers: request.headers.sorted { $0.key < $1.key }.map { HTTPHeader($0.key, $0.value) }, body: request.body,
                        label: tag.flatMap(RequestTag.label(ofValue:))))
                    output.write(ExecAnswer(id: request.id, response ?? DriverResponse(error: .other, errorMessage: "the driver failed")))
                }
            }
        }
        await driver.shutdown()
        StandardStream.error.write(await driver.log)
    }
}

extension ExecAnswer {
    /// What the client saw, as the protocol writes it.
    init(id: Int, _ response: DriverResponse) {
        self.init(
            id: id, status: response.status,
            headers: Dictionary(response.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { "\($0), \($1)" }),
            bodySHA256: response.bodySHA256, bodyLength: response.bodyLength, body: response.body,
            error: response.error.map { ExecAnswerError(kind: $0.rawValue, message: response.errorMessage) },
            localPort: response.localPort, fromCache: response.fromClientCache ? true : nil, elapsed: nil)
    }
}

/// stdin's lines, read on a thread of their own (a blocking read must not hold one of Swift
/// concurrency's few threads).
private struct StandardInputLines {
    let stream: AsyncStream<String>

    init() {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        self.stream = stream
        let thread = Thread {
            while let line = readLine(strippingNewline: true) { continuation.yield(line) }
            continuation.finish()
        }
        thread.start()
    }
}

/// Writes one JSON line at a time to stdout, whole, from any task.
private final class AnswerWriter: Sendable {
    private let lock = NIOLock()

    func write(_ answer: ExecAnswer) {
        guard let data = try? JSONEncoder().encode(answer) else { return }
        emit(data)
    }

    func write(_ object: [String: any Sendable]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object as [String: Any]) else { return }
        emit(data)
    }

    private func emit(_ data: Data) {
        lock.withLock { StandardStream.output.write(bytes: [UInt8](data) + [0x0A]) }
    }
}
