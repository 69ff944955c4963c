import Testing
@testable import netsim

/// A negative value typed after its option reaches the option's own check.
@Suite("negative option values")
struct NegativeValuesTests {
    @Test func aNegativeValueIsJoinedToTheOptionBeforeIt() {
        #expect(NegativeValues.joined(["replay", "x.pcap", "--speed", "-1"]) == ["replay", "x.pcap", "--speed=-1"])
        #expect(NegativeValues.joined(["relay", "--latency", "-5ms", "--jitter", "-.5ms"]) == ["relay", "--latency=-5ms", "--jitter=-.5ms"])
        // Not after a short word, an option that has its value, nor anything after `--`.
        #expect(NegativeValues.joined(["--speed=2", "-1"]) == ["--speed=2", "-1"])
        #expect(NegativeValues.joined(["shell", "--", "sort", "-1"]) == ["shell", "--", "sort", "-1"])
        #expect(NegativeValues.joined(["shell", "--latency", "5ms", "--", "head", "--lines", "-5"]) == ["shell", "--latency", "5ms", "--", "head", "--lines", "-5"])
        // Words that are options stay options.
        #expect(NegativeValues.joined(["run", "--seed", "--help"]) == ["run", "--seed", "--help"])
        #expect(NegativeValues.joined(["run", "--seed", "-"]) == ["run", "--seed", "-"])
    }

    /// A count that is not a whole number says what is allowed (QA 61: ArgumentParser's own
    /// "The value 'abc' is invalid", and the same for a number past Int's range).
    @Test func aCountThatIsNotAWholeNumberSaysWhatIsAllowed() {
        for value in ["abc", "100000000000000000000", "1.5"] {
            let message = OutputFileTests.message { _ = try TestCommand.parse(["Scenarios", "--jobs", value]) }
            #expect(message.contains("'\(value)' is not a whole number; write it as a whole number of 1 or more"), "\(message)")
        }
        let repeated = OutputFileTests.message { _ = try TestCommand.parse(["Scenarios", "--repeat", "x"]) }
        #expect(repeated.contains("'x' is not a whole number"), "\(repeated)")
        let relay = OutputFileTests.message { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:9", "--max-connections", "many"]) }
        #expect(relay.contains("'many' is not a whole number"), "\(relay)")
    }

    /// What the join is for: the option's check names its range.
    @Test func theOptionsOwnCheckThenSaysWhatItAllows() {
        let message = OutputFileTests.message { _ = try RelayCommand.parse(NegativeValues.joined(["--upstream", "127.0.0.1:9", "--max-connections", "-1"])) }
        #expect(message.contains("--max-connections -1: give 1 or more"), "\(message)")
        // A seed says its range (ArgumentParser's own message was only "is invalid").
        let seed = OutputFileTests.message { _ = try RelayCommand.parse(NegativeValues.joined(["--upstream", "127.0.0.1:9", "--seed", "-1"])) }
        #expect(seed.contains("'-1' is not a seed; write it as a whole number from 0 to 18446744073709551615"), "\(seed)")
    }
}
