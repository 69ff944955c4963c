import NetsimCore
import NetsimHTTP
import NetsimScenario

/// Everything a run produced, and its verdicts.
public struct RunResult: Sendable {
    public var scenario: Scenario
    public var driverName: String
    /// In start order, each attached to the relay connection that carried it.
    public var outcomes: [RequestOutcome]
    public var serverRequests: [ServerRequest]
    public var events: [Event]
    public var verdicts: [CheckVerdict]
    /// Nanoseconds from the run's start to the last request's end.
    public var duration: Int64
    /// What the client logged (stderr of an exec client).
    public var clientLog: String
    /// The seed every random decision of the run came from (`--seed`, else the scenario's).
    public var seed: UInt64 = 1

    public var passed: Bool { verdicts.allSatisfy(\.passed) }
    public var failures: [CheckVerdict] { verdicts.filter { !$0.passed } }
}

/// The verdict on one check of one expectation.
public struct CheckVerdict: Sendable {
    public var expectation: Expectation
    public var check: LocatedCheck
    public var passed: Bool
    /// `request after-unlock: status 200`.
    public var title: String
    public var expected: String
    public var actual: String
    /// The scenario time the failure is about, to show the timeline around it.
    public var focus: Int64?
    /// Why a pass may say little: the relay saw nothing the check could judge (no HTTP over a
    /// TLS tunnel, no connection attempt while its listener was closed). Shown under a passed
    /// check; before, only `--json`'s `actual` said so.
    public var note: String?
}

/// What the judge looks at.
struct Observations {
    var outcomes: [RequestOutcome]
    var serverRequests: [ServerRequest]
    var events: [Event]
    /// When the timeline ended, in scenario time (the run's `duration`).
    var ended: Int64
}

extension RunResult {
    /// Security findings of the run: a client that accepted a certificate it must refuse
    /// (`bad-cert`), as "SECURITY: … (connection #N)".
    public var securityFindings: [String] {
        events.compactMap { event in
            guard case .faultFired(_, let detail) = event.kind, detail.hasPrefix("SECURITY:") else { return nil }
            return detail + (event.connection.map { " (connection \($0))" } ?? "")
        }
    }
}

extension RunResult {
    /// The scenario's fault steps whose fault never acted in the run, as `rst-stream (line 31)`:
    /// checks that passed did so without it (QA 64: an HTTP/2 fault under an HTTP/1.1 client, a
    /// rule for open connections with none open, passed with nothing said). A `refuse` acts by
    /// closing the listener; every other fault logs a `fault` event where it acts, or says
    /// ``Event/nothingDone`` where it met nothing to act on.
    public var faultsThatNeverActed: [String] {
        var acted = Set<FaultName>()
        for event in events {
            switch event.kind {
            case .faultFired(let fault, let detail) where !detail.contains(Event.nothingDone): acted.insert(fault)
            case .listenerClosed(let reason) where reason.hasPrefix("refuse"): acted.insert(FaultName("refuse"))
            default: break
            }
        }
        return scenario.timeline.compactMap { step in
            guard case .fault(_, let rule) = step.action, !acted.contains(rule.kind.faultName) else { return nil }
            return "\(rule.kind.faultName) (line \(step.location.line))"
        }
    }
}
