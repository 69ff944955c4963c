import ArgumentParser
import NetsimCore
import NetsimLink
import NetsimRelay

// Conversions from command-line text to netsim's units. Each failure message names the
// accepted forms (UnitParseError's description), which ArgumentParser prints after the flag.

func parseDuration(_ text: String) throws -> Duration { try Duration(parsing: text) }
/// `--duration` of a command that runs until stopped: 0 stopped it at once, exit 0 (QA 63).
func parseRunDuration(_ text: String) throws -> Duration {
    let duration = try Duration(parsing: text)
    guard duration > .zero else {
        throw UnitParseError(input: text, expected: "a duration longer than 0 (0 would stop at once)", allowedForms: "30s, 5m; leave --duration out to run until Ctrl-C")
    }
    return duration
}
func parseRate(_ text: String) throws -> DataRate { try DataRate(parsing: text) }
func parseBytes(_ text: String) throws -> ByteCount { try ByteCount(parsing: text) }
func parseProbability(_ text: String) throws -> Probability { try Probability(parsing: text) }
func parseEndpoint(_ text: String) throws -> Endpoint { try Endpoint(parsing: text) }
/// A fault as `--fault` writes it. `NAME@AT+FOR` is netsim shell's: the relay's timing flags are
/// named for it (QA 63: "is not a fault", and the list of faults).
func parseFault(_ text: String) throws -> FaultKind {
    if let at = text.firstIndex(where: { $0 == "@" || $0 == "+" }), let kind = try? FaultKind(parsing: String(text[..<at])) {
        throw UnitParseError(input: text, expected: "a fault here (NAME@AT+FOR is netsim shell's timing)",
                             allowedForms: "--fault \(kind) with --fault-at AT and --fault-for FOR (or --fault-after, per connection), which time every --fault given")
    }
    return try FaultKind(parsing: text)
}
func parseTrace(_ path: String) throws -> DeliveryTrace { try DeliveryTrace(contentsOf: path) }
/// A seed says its range: ArgumentParser's own message for `--seed -1` was only "is invalid".
func parseSeed(_ text: String) throws -> UInt64 {
    guard let seed = UInt64(text) else {
        throw UnitParseError(input: text, expected: "a seed", allowedForms: "a whole number from 0 to \(UInt64.max), e.g. 42")
    }
    return seed
}

/// A count (`--jobs`, `--repeat`, `--max-connections`): ArgumentParser's own message for `abc`
/// or a number past Int's range said only "is invalid" (QA 61). The option checks its range.
func parseCount(_ text: String) throws -> Int {
    guard let count = Int(text) else {
        throw UnitParseError(input: text, expected: "a whole number", allowedForms: "a whole number of 1 or more, e.g. 4")
    }
    return count
}

func parseDistribution(_ text: String) throws -> JitterDistribution {
    guard let value = JitterDistribution(rawValue: text.lowercased()) else {
        throw ValidationError("'\(text)' is not a distribution; use one of \(JitterDistribution.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return value
}

func parseProfile(_ text: String) throws -> LinkProfile {
    guard let profile = LinkProfile.named(text) else {
        throw ValidationError("'\(text)' is not a profile; use one of \(LinkProfile.all.map(\.name).joined(separator: ", ")) (see `netsim profiles`)")
    }
    return profile
}

enum LossModelName: String, ExpressibleByArgument, CaseIterable {
    case bernoulli
    case gilbertElliott = "gilbert-elliott"
}

extension FaultTarget: ExpressibleByArgument {}

/// `--connect-timeout` of the relay and the proxy: 0 would fail every upstream connect at once,
/// and below a millisecond (nginx's smallest unit) even one to loopback fails (QA 51: 1ns).
func checkConnectTimeout(_ timeout: Duration, default fallback: Duration) throws {
    if timeout <= .zero {
        throw ValidationError("--connect-timeout \(timeout.compactDescription): give a duration longer than 0 (0 fails every upstream connect at once); the default is \(fallback.compactDescription)")
    }
    if timeout < .milliseconds(1) {
        throw ValidationError("--connect-timeout \(timeout.compactDescription): give 1ms or more (a connect takes longer than that even on loopback); the default is \(fallback.compactDescription)")
    }
}
