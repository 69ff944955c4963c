import Foundation
import NetsimCore
@testable import NetsimRunner
import NetsimScenario

/// A run made up rather than measured, as large as a test asks: `connections` relay connections,
/// each opened, carrying one tagged HTTP request and `byteEvents` byte batches, closed with a
/// FIN — or, every `faultEvery`-th one, hit by a fault that swallows bytes and resets it. For
/// what a real run cannot cheaply be: a thousand connections and ten megabytes of events.
enum SyntheticRun {
    static let source = """
        name: synthetic
        description: "made up for the report's tests </script><script>document.title='injected'</script> & <b>not bold</b>"
        upstream:
          routes:
            - path: /item
              body: x
        client:
          driver: naive
        timeline:
          - request: load
            path: /item
          - fault: stale=rst
            target: existing
        expect:
          - request: load
            status: 200
          - request: load
            error: none
        """

    struct Shape {
        var connections: Int
        var byteEvents: Int
        var faultEvery: Int
    }

    /// The run and how many of its events are faults, resets and closes (which the report must all draw).
    static func make(_ shape: Shape) throws -> (result: RunResult, faults: Int, resets: Int) {
        let scenario = try ScenarioParser.parse(source: source, file: "synthetic.scn")
        var events: [Event] = []
        var outcomes: [RequestOutcome] = []
        var faults = 0
        let spacing: Int64 = 10_000_000  // a new connection every 10 ms
        let life: Int64 = 2_000_000_000
        func add(_ time: Int64, _ id: ConnectionID?, _ kind: EventKind) { events.append(Event(time: time, connection: id, kind: kind)) }
        add(0, nil, .listening(address: "127.0.0.1:40000"))
        add(1000, nil, .step(description: "request load: GET /item ×\(shape.connections)"))
        for n in 1...shape.connections {
            let id = ConnectionID(UInt64(n)), opened = Int64(n) * spacing, faulted = n % shape.faultEvery == 0
            add(opened, id, .opened(client: Endpoint(host: "127.0.0.1", port: 30000 + n % 30000)))
            add(opened + 200_000, id, .upstreamConnected(upstream: "127.0.0.1:40001", after: 200_000))
            add(opened + 300_000, id, .httpRequest(method: "GET", path: "/item", reused: false, tag: "load#\(n)"))
            let gap = life / Int64(shape.byteEvents + 2)
            for b in 0..<shape.byteEvents {
                add(opened + 400_000 + Int64(b) * gap, id, .bytes(b % 3 == 0 ? .up : .down, count: 1000 + (n * 7 + b * 13) % 60_000))
            }
            let end = opened + life
            if faulted {
                faults += 1
                add(end - 2_000_000, id, .faultFired(fault: FaultName("stale"), detail: "swallowed 106 bytes from the client; closing it with RST"))
                add(end - 2_000_000, id, .dropped(.up, count: 106, fault: FaultName("stale")))
                add(end, id, .closed(by: .relay, how: .rst, upBytes: 100, downBytes: 200))
            } else {
                add(end - 1_000_000, id, .httpResponse(status: 200, bytes: 1))
                add(end - 500_000, id, .halfClosed(by: .client))
                add(end, id, .closed(by: .client, how: .fin, upBytes: 100, downBytes: 200))
            }
            outcomes.append(RequestOutcome(
                name: "load", index: n - 1, method: "GET", path: "/item", started: opened, finished: end - 400_000,
                response: faulted ? DriverResponse(error: .reset, errorMessage: "Connection reset by peer") : DriverResponse(status: 200),
                connection: id, connectionOpened: opened, reusedConnection: false))
        }
        let last = Int64(shape.connections) * spacing + life
        add(last / 2, nil, .step(description: "fault stale=rst on existing connections"))
        add(last / 2, nil, .faultAdded(fault: FaultName("stale"), rule: "stale=rst on existing connections"))
        events.sort { $0.time < $1.time }
        let failedCount = faults
        let verdicts = scenario.expectations.flatMap { expectation in
            expectation.checks.map { check in
                let isError = check.check == .error(.none)
                return CheckVerdict(
                    expectation: expectation, check: check, passed: failedCount == 0,
                    title: isError ? "request load: error none" : "request load: status 200",
                    expected: isError ? "no error for all \(shape.connections) requests" : "status 200",
                    actual: isError ? "\(failedCount) of \(shape.connections) did not" : "all 200",
                    focus: isError ? last / 2 : nil)
            }
        }
        let result = RunResult(
            scenario: scenario, driverName: "naive", outcomes: outcomes, serverRequests: [], events: events,
            verdicts: verdicts, duration: last, clientLog: "")
        return (result, faults, faults)
    }

    /// The size of the run's event log as `--events` writes it (JSON lines).
    static func eventBytes(_ result: RunResult) -> Int {
        result.events.reduce(0) { $0 + $1.jsonLine.utf8.count + 1 }
    }
}
