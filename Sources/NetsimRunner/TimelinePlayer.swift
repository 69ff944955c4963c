import Foundation
import NetsimCore
import NetsimHTTP
import NetsimRelay
import NetsimScenario

/// Plays a scenario's timeline against a running relay and client.
///
/// A step with `at` fires at that scenario time (requests already in flight go on); a step
/// without `at` waits until the step before it has finished. Scenario time is the event log's
/// time, so every report lines steps, requests and relay events up on one clock.
final class TimelinePlayer: @unchecked Sendable {
    let scenario: Scenario
    let relay: Relay
    let relayEndpoint: Endpoint
    let driver: any ClientDriver
    let log: EventLog
    let observer: (any RunObserver)?

    private let lock = NSLock()
    private var outcomes: [RequestOutcome] = []
    private var nextRequestID = 1
    private var faults: [String: FaultID] = [:]

    init(scenario: Scenario, relay: Relay, relayEndpoint: Endpoint, driver: any ClientDriver, log: EventLog, observer: (any RunObserver)?) {
        self.scenario = scenario
        self.relay = relay
        self.relayEndpoint = relayEndpoint
        self.driver = driver
        self.log = log
        self.observer = observer
    }

    var now: Int64 { log.clock.now() - log.origin }

    /// Runs every step, waits for every request, and returns the outcomes in start order.
    func play() async -> [RequestOutcome] {
        var previous: Task<Void, Never>?
        var requestTasks: [Task<Void, Never>] = []
        for step in scenario.timeline {
            if let at = step.at {
                let delay = at.nanoseconds - now
                if delay > 0 { try? await Task.sleep(for: .nanoseconds(delay)) }
            } else {
                await previous?.value
            }
            previous = nil
            switch step.action {
            case .request(let request):
                fired(step, "request \(request.name): \(request.method) \(request.path)"
                    + (request.count > 1 ? " ×\(request.count)" : "") + (request.parallel > 1 ? ", \(request.parallel) at a time" : ""))
                let task = Task { await self.send(request) }
                requestTasks.append(task)
                previous = task
            case .fault(let name, let rule):
                fired(step, "fault \(rule)" + (name.map { " (\($0))" } ?? ""))
                if let id = try? await relay.addFault(rule), let name { lock.withLock { faults[name] = id } }
            case .clear(let names) where names.isEmpty:
                fired(step, "clear all faults")
                await relay.removeAllFaults()
            case .clear(let names):
                let ids = lock.withLock { names.compactMap { faults[$0] } }
                fired(step, "clear " + names.joined(separator: ", "))
                for id in ids { await relay.removeFault(id) }
            case .link(let link):
                fired(step, "link \(link)")
                await relay.setLink(link)
            case .login:
                fired(step, "login at the captive portal")
                await relay.login()
            case .wait(let duration):
                fired(step, "wait \(duration.compactDescription)")
                try? await Task.sleep(for: duration)
            }
        }
        for task in requestTasks { await task.value }
        return lock.withLock { outcomes.sorted { ($0.started, $0.name, $0.index) < ($1.started, $1.name, $1.index) } }
    }

    private func fired(_ step: TimelineStep, _ description: String) {
        log.record(.step(description: description))
        observer?.stepFired(step, at: now, description: description)
    }

    /// Sends `count` requests, at most `parallel` at once.
    private func send(_ request: RequestStep) async {
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            for _ in 0..<min(request.parallel, request.count) {
                let index = next
                group.addTask { await self.perform(request, index: index) }
                next += 1
            }
            while await group.next() != nil, next < request.count {
                let index = next
                group.addTask { await self.perform(request, index: index) }
                next += 1
            }
        }
    }

    private func perform(_ request: RequestStep, index: Int) async {
        let id = lock.withLock {
            defer { nextRequestID += 1 }
            return nextRequestID
        }
        let url = "http://\(relayEndpoint)\(request.path)"
        log.record(.requestStarted(name: request.name, index: index, method: request.method, path: request.path))
        let started = now
        let response: DriverResponse
        do {
            let tag = HTTPHeader(RequestTag.header, RequestTag.value(name: request.name, index: index))
            response = try await driver.perform(DriverRequest(id: id, method: request.method, url: url, headers: request.headers + [tag], body: request.body))
        } catch {
            response = DriverResponse(error: .other, errorMessage: "driver failure: \(error)")
        }
        let finished = now
        log.record(.requestFinished(name: request.name, index: index, status: response.status, error: response.error?.rawValue, port: response.localPort))
        let outcome = RequestOutcome(
            name: request.name, index: index, method: request.method, path: request.path,
            started: started, finished: finished, response: response)
        lock.withLock { outcomes.append(outcome) }
        observer?.requestFinished(outcome)
    }
}

/// Which relay connection carried a request: the client reports its local port, the relay
/// logged each accepted client's address.
struct ConnectionMap {
    private var opened: [Int: [(time: Int64, id: ConnectionID)]] = [:]
    private var openedAt: [ConnectionID: Int64] = [:]
    /// Each request tag's appearances on the relay, in time order.
    private var tagged: [String: [(time: Int64, id: ConnectionID)]] = [:]

    init(events: [Event]) {
        for event in events {
            guard let id = event.connection else { continue }
            switch event.kind {
            case .opened(let client):
                openedAt[id] = event.time
                if let port = client.split(separator: ":").last.flatMap({ Int($0) }) {
                    opened[port, default: []].append((event.time, id))
                }
            case .httpRequest(_, _, _, _, let tag?):
                tagged[tag, default: []].append((event.time, id))
            default:
                break
            }
        }
    }

    /// The connection opened from `port` most recently before `time` (ports are reused).
    func connection(port: Int, before time: Int64) -> (time: Int64, id: ConnectionID)? {
        opened[port]?.last { $0.time <= time }
    }

    /// Fills in each outcome's connection and whether an earlier request used it: from the
    /// client's local port, or — for a client that cannot tell it (URLSession) — from the
    /// relay's record of the request's tag (its last attempt before it finished).
    func attach(to outcomes: [RequestOutcome]) -> [RequestOutcome] {
        var seen: Set<ConnectionID> = []
        return outcomes.sorted { $0.started < $1.started }.map { outcome in
            var outcome = outcome
            let tag = RequestTag.value(name: outcome.name, index: outcome.index)
            let found = outcome.response.localPort.flatMap { connection(port: $0, before: outcome.finished) }
                ?? tagged[tag]?.last(where: { $0.time <= outcome.finished }).flatMap { carried in
                    openedAt[carried.id].map { (time: $0, id: carried.id) }
                }
            if let (opened, id) = found {
                outcome.connection = id
                outcome.connectionOpened = opened
                outcome.reusedConnection = !seen.insert(id).inserted
            }
            return outcome
        }
    }
}
