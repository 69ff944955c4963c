import Foundation
import NetsimCore
import NetsimHTTP
import NetsimFaults
import NetsimRelay
import NetsimScenario
import NIOConcurrencyHelpers

/// Plays a scenario's timeline against a running link (the relay, or a packet path) and client.
///
/// A step with `at` fires at that scenario time (requests already in flight go on); a step
/// without `at` waits until the step before it has finished. Scenario time is the event log's
/// time, so every report lines steps, requests and relay events up on one clock.
final class TimelinePlayer: Sendable {
    let scenario: Scenario
    let link: any RunLink
    /// `host:port` in request URLs: the relay's listener, or the upstream as the namespace reaches it.
    let authority: String
    let driver: any ClientDriver
    let log: EventLog
    let observer: (any RunObserver)?

    /// What concurrent requests and steps share.
    private struct State {
        var outcomes: [RequestOutcome] = []
        /// Named faults, for `clear`.
        var faults: [String: FaultID] = [:]
    }

    private let state = NIOLockedValueBox(State())

    init(scenario: Scenario, link: any RunLink, authority: String, driver: any ClientDriver, log: EventLog, observer: (any RunObserver)?) {
        self.scenario = scenario
        self.link = link
        self.authority = authority
        self.driver = driver
        self.log = log
        self.observer = observer
    }

    var now: Int64 { log.clock.now() - log.origin }

    /// Runs every step, waits for every request, and returns the outcomes in start order.
    func play() async -> [RequestOutcome] {
        var previous: Task<Void, Never>?
        var requestTasks: [Task<Void, Never>] = []
        // The driver's ids follow the scenario's order: a step's request `i` is its first id + i,
        // whatever order parallel requests start in (numbered as they started, a client's log
        // said `#11` for the report's `#10`).
        var nextRequestID = 1
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
                    + (request.count > 1 ? " ×\(request.count)" : "") + (request.parallel > 1 ? ", \(request.parallel) at a time" : "")
                    + (request.every.map { ", one every \($0.compactDescription)" } ?? ""))
                let firstID = nextRequestID
                nextRequestID += request.count
                let task = Task { await self.send(request, firstID: firstID) }
                requestTasks.append(task)
                previous = task
            case .fault(let name, let rule):
                fired(step, "fault \(rule)" + (name.map { " (\($0))" } ?? ""))
                if let id = try? await link.addFault(rule), let name { state.withLockedValue { $0.faults[name] = id } }
            case .clear(let names) where names.isEmpty:
                fired(step, "clear all faults")
                await link.removeAllFaults()
            case .clear(let names):
                let ids = state.withLockedValue { state in names.compactMap { state.faults[$0] } }
                fired(step, "clear " + names.joined(separator: ", "))
                for id in ids { await link.removeFault(id) }
            case .link(let configuration):
                fired(step, "link \(configuration)")
                await link.setLink(configuration)
            case .login:
                fired(step, "login at the captive portal")
                await link.signIn()
            case .wait(let duration):
                fired(step, "wait \(duration.compactDescription)")
                try? await Task.sleep(for: duration)
            }
        }
        for task in requestTasks { await task.value }
        return state.withLockedValue { $0.outcomes }.sorted { ($0.started, $0.name, $0.index) < ($1.started, $1.name, $1.index) }
    }

    private func fired(_ step: TimelineStep, _ description: String) {
        log.record(.step(description: description))
        observer?.stepFired(step, at: now, description: description)
    }

    /// Sends `count` requests, at most `parallel` at once, or one each `every`.
    private func send(_ request: RequestStep, firstID: Int) async {
        if let every = request.every { return await send(request, every: every, firstID: firstID) }
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            for _ in 0..<min(request.parallel, request.count) {
                let index = next
                group.addTask { await self.perform(request, index: index, id: firstID + index) }
                next += 1
            }
            while await group.next() != nil, next < request.count {
                let index = next
                group.addTask { await self.perform(request, index: index, id: firstID + index) }
                next += 1
            }
        }
    }

    /// Request `i` starts at the step's start + i × `every`, on scenario time, whatever is still
    /// in flight: a polling timer, not a loop that waits for each answer.
    private func send(_ request: RequestStep, every: Duration, firstID: Int) async {
        let start = now
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<request.count {
                let due = start + every.nanoseconds * Int64(index)
                let delay = due - now
                if delay > 0 { try? await Task.sleep(for: .nanoseconds(delay)) }
                group.addTask { await self.perform(request, index: index, id: firstID + index) }
            }
        }
    }

    private func perform(_ request: RequestStep, index: Int, id: Int) async {
        let url = "\(scenario.scheme)://\(authority)\(request.path)"
        log.record(.requestStarted(name: request.name, index: index, method: request.method, path: request.path))
        observer?.requestStarted(name: request.name, index: index)
        let started = now
        let response: DriverResponse
        do {
            let tag = HTTPHeader(RequestTag.header, RequestTag.value(name: request.name, index: index))
            response = try await driver.perform(DriverRequest(id: id, method: request.method, url: url, headers: request.headers + [tag], body: request.body,
                                                              label: RequestTag.label(name: request.name, index: index)))
        } catch {
            response = DriverResponse(error: .other, errorMessage: "driver failure: \(error)")
        }
        let finished = now
        log.record(.requestFinished(name: request.name, index: index, status: response.status, error: response.error?.rawValue, port: response.localPort))
        let outcome = RequestOutcome(
            name: request.name, index: index, method: request.method, path: request.path,
            started: started, finished: finished, response: response)
        state.withLockedValue { $0.outcomes.append(outcome) }
        observer?.requestFinished(outcome)
    }
}
