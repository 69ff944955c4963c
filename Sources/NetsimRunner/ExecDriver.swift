import Foundation
import NetsimCore
import NetsimHTTP
import NetsimScenario

/// Drives any program over JSON lines on stdin/stdout (docs/drivers.md). The process lives for
/// the whole run, so its connection pool persists across requests.
public final class ExecDriver: ClientDriver, @unchecked Sendable {
    public private(set) var name: String
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let lock = NSLock()
    private var waiting: [Int: CheckedContinuation<DriverResponse, Never>] = [:]
    private var early: [Int: DriverResponse] = [:]
    private var stderrText = BoundedText(limit: 64 * 1024)
    private var exited = false
    private var greeted = false
    /// Longest a request may stay unanswered before the driver reports a timeout itself.
    private let answerDeadline: Duration

    /// Starts `command` with `client`'s settings as its first input line.
    public init(command: [String], client: ClientSpec, workingDirectory: String? = nil) throws {
        guard let program = command.first else { throw RunnerError.invalid("the exec driver needs a command") }
        name = "exec: " + command.joined(separator: " ")
        answerDeadline = (client.timeout ?? .seconds(30)) * 3 + .seconds(10)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + command.dropFirst()
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        process.terminationHandler = { [weak self] _ in self?.processExited() }
        do {
            try process.run()
        } catch {
            throw RunnerError.invalid("cannot start the exec client \(command.joined(separator: " ")): \(error.localizedDescription)")
        }
        startReading()
        try send([
            "type": "config",
            "timeout": client.timeout.map { $0.seconds } as Any? ?? NSNull(),
            "connect_timeout": client.connectTimeout.map { $0.seconds } as Any? ?? NSNull(),
            "pool": client.pool as Any? ?? NSNull(),
            "retries": client.retries as Any? ?? NSNull(),
            "settings": client.settings,
        ])
    }

    public func perform(_ request: DriverRequest) async throws -> DriverResponse {
        var headers: [String: String] = [:]
        for header in request.headers { headers[header.name] = header.value }
        let line: [String: Any] = [
            "type": "request", "id": request.id, "method": request.method, "url": request.url,
            "headers": headers, "body": request.body as Any? ?? NSNull(),
        ]
        let deadline = answerDeadline
        let id = request.id
        let timer = Task { [weak self] in
            try await Task.sleep(for: deadline)
            self?.answer(id, DriverResponse(error: .timeout, errorMessage: "the exec client did not answer within \(deadline.compactDescription)"))
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready = lock.withLock { () -> DriverResponse? in
                if let response = early.removeValue(forKey: id) { return response }
                if exited { return DriverResponse(error: .other, errorMessage: "the exec client has exited") }
                waiting[id] = continuation
                return nil
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            do {
                try send(line)
            } catch {
                answer(id, DriverResponse(error: .other, errorMessage: "cannot write to the exec client: \(error)"))
            }
        }
    }

    /// The protocol's first line from the client is `hello`: it means the client has started
    /// and can take requests. Scenario time starts only then, so a slow interpreter start does
    /// not eat into the timeline.
    public func ready(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let (hello, gone) = lock.withLock { (greeted, exited) }
            if hello { return }
            if gone { throw RunnerError.failed("the exec client exited before saying hello\n" + lock.withLock { stderrText.text }) }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw RunnerError.failed("the exec client did not say hello within \(timeout.compactDescription) (docs/drivers.md: the first line a client writes is {\"type\":\"hello\",…})")
    }

    public func shutdown() async {
        try? input.fileHandleForWriting.close()
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning { process.terminate() }
    }

    public var log: String { get async { lock.withLock { stderrText.text } } }

    // MARK: Plumbing

    private func send(_ object: [String: Any]) throws {
        var data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        data.append(0x0A)
        try input.fileHandleForWriting.write(contentsOf: data)
    }

    private func startReading() {
        Thread { [self] in
            var buffer = Data()
            let handle = output.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = buffer[buffer.startIndex..<newline]
                    buffer = Data(buffer[buffer.index(after: newline)...])
                    handleLine(Data(line))
                }
            }
            processExited()
        }.start()
        Thread { [self] in
            let handle = errors.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                lock.withLock { stderrText.append(String(decoding: chunk, as: UTF8.self)) }
            }
        }.start()
    }

    private func handleLine(_ line: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else {
            lock.withLock { stderrText.append("[netsim] not a JSON object on stdout: \(String(decoding: line, as: UTF8.self))\n") }
            return
        }
        if object["type"] as? String == "hello" {
            let hello = [object["name"], object["version"]].compactMap { $0 as? String }.joined(separator: " ")
            lock.withLock {
                if !hello.isEmpty { name = "exec: " + hello }
                greeted = true
            }
            return
        }
        guard let id = object["id"] as? Int else { return }
        answer(id, Self.response(from: object))
    }

    static func response(from object: [String: Any]) -> DriverResponse {
        var response = DriverResponse()
        response.status = object["status"] as? Int
        if let headers = object["headers"] as? [String: Any] {
            response.headers = headers.sorted { $0.key < $1.key }.map { HTTPHeader($0.key, "\($0.value)") }
        }
        response.bodySHA256 = object["body_sha256"] as? String
        response.bodyLength = object["body_length"] as? Int
        response.body = object["body"] as? String
        response.localPort = object["local_port"] as? Int
        if let error = object["error"] as? [String: Any] {
            response.error = (error["kind"] as? String).flatMap(ErrorKind.init(rawValue:)) ?? .other
            response.errorMessage = error["message"] as? String
        }
        return response
    }

    private func answer(_ id: Int, _ response: DriverResponse) {
        let continuation = lock.withLock { () -> CheckedContinuation<DriverResponse, Never>? in
            if let waiter = waiting.removeValue(forKey: id) { return waiter }
            if !exited { early[id] = response }  // answered before we waited (or a late timeout)
            return nil
        }
        continuation?.resume(returning: response)
    }

    private func processExited() {
        let pending = lock.withLock { () -> [CheckedContinuation<DriverResponse, Never>] in
            exited = true
            defer { waiting.removeAll() }
            return Array(waiting.values)
        }
        for continuation in pending {
            continuation.resume(returning: DriverResponse(error: .other, errorMessage: "the exec client exited before answering"))
        }
    }
}

/// Keeps the last `limit` characters of a growing text.
struct BoundedText {
    let limit: Int
    private(set) var text = ""

    init(limit: Int) { self.limit = limit }

    mutating func append(_ more: String) {
        text += more
        if text.count > limit { text = "…" + text.suffix(limit) }
    }
}

/// Something that stops a run before or while it starts.
public enum RunnerError: Error, CustomStringConvertible {
    /// Input the scenario or the command line got wrong (exit code 2).
    case invalid(String)
    /// The harness itself failed (exit code 1).
    case failed(String)

    public var description: String {
        switch self {
        case .invalid(let text), .failed(let text): text
        }
    }
}
