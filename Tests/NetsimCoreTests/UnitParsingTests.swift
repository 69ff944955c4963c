import NetsimCore
import Testing

@Suite("Units as people write them")
struct UnitParsingTests {
    @Test(arguments: [
        ("30ms", 30_000_000), ("1.5s", 1_500_000_000), ("250us", 250_000), ("2m", 120_000_000_000),
        ("1h", 3_600_000_000_000), ("0", 0), ("10ns", 10), (" 5 ms ", 5_000_000),
        // Each unit's usual spellings, whole families (`1sec` worked and `100msec` did not).
        ("100msec", 100_000_000), ("5seconds", 5_000_000_000), ("1 hour", 3_600_000_000_000),
        ("2minutes", 120_000_000_000), ("3usec", 3_000), ("1.5Sec", 1_500_000_000), ("2hrs", 7_200_000_000_000),
    ] as [(String, Int64)])
    func durations(text: String, nanoseconds: Int64) throws {
        #expect(try Duration(parsing: text).nanoseconds == nanoseconds)
    }

    @Test(arguments: ["30", "ms", "-5ms", "5 parsecs", "1.2.3s", "", "fast"])
    func badDurationsNameTheAllowedForms(text: String) {
        #expect(throws: UnitParseError.self) { try Duration(parsing: text) }
        do {
            _ = try Duration(parsing: text)
        } catch {
            #expect("\(error)".contains("30ms, 1.5s"))
        }
    }

    @Test(arguments: [
        ("256kbit", 256_000.0), ("2mbit", 2_000_000), ("1gbit", 1_000_000_000), ("64kbps", 64_000),
        ("100KB/s", 800_000), ("1.5MB/s", 12_000_000), ("8bit", 8), ("10mbit/s", 10_000_000),
        // An upper-case B before ps is bytes (QA 63: 1MBps was 1 mbit, 8× slow); lower-case bits.
        ("1MBps", 8_000_000), ("100KBps", 800_000), ("100kBps", 800_000), ("2GBps", 16e9), ("500Bps", 4000), ("1Mbps", 1_000_000),
        ("1mbps", 1_000_000),
    ] as [(String, Double)])
    func rates(text: String, bitsPerSecond: Double) throws {
        #expect(try DataRate(parsing: text).bitsPerSecond == bitsPerSecond)
    }

    @Test(arguments: ["100", "100kb", "fast", "0kbit", "-1mbit", "1 furlong/s", "0.0001bit", "99999999999999999gbit"])
    func badRates(text: String) {
        #expect(throws: UnitParseError.self) { try DataRate(parsing: text) }
    }

    /// The bounds: a year of duration and 1 bit/s … 10 Tbit/s, each said in the message. Past
    /// them a clock reading plus the duration, or printing the rate, overflowed Int64 and trapped.
    /// A very long value is quoted by its start and length, not whole (QA 52: a 100,000-digit
    /// latency made a 100,061-character line); a short one whole.
    @Test func aLongValueIsQuotedShort() {
        let long = String(repeating: "9", count: 100_000)
        let message = "\(UnitParseError(input: long, expected: "a duration", allowedForms: Duration.allowedForms))"
        #expect(message.count < 500 && message.hasPrefix("'\(String(repeating: "9", count: 60))… (100000 characters)' is not a duration"), "\(message.prefix(200))")
        #expect("\(UnitParseError(input: "5 sec", expected: "a duration", allowedForms: "30ms"))" == "'5 sec' is not a duration; write it as 30ms")
    }

    @Test func outOfRangeValuesSayTheRange() throws {
        #expect(try Duration(parsing: "8760h") == .seconds(365 * 24 * 3600))
        // Finer than a nanosecond, above 0: it was taken as 0 (QA 52).
        #expect(throws: UnitParseError(input: "0.0000001ns", expected: "a duration netsim can hold (0, or 1ns at least: its resolution)", allowedForms: Duration.allowedForms)) {
            try Duration(parsing: "0.0000001ns")
        }
        #expect(try Duration(parsing: "0.5ns") == .nanoseconds(1) && Duration(parsing: "0ns") == .zero && Duration(parsing: "0.000s") == .zero)
        #expect(throws: UnitParseError(input: "8761h", expected: "a duration netsim can run (at most 8760h, a year)", allowedForms: Duration.allowedForms)) {
            try Duration(parsing: "8761h")
        }
        #expect(try DataRate(parsing: "1bit").bitsPerSecond == 1 && DataRate(parsing: "10000gbit").bitsPerSecond == 1e13)
        #expect(throws: UnitParseError(input: "10001gbit", expected: "a data rate from 1bit to 10000gbit", allowedForms: DataRate.allowedForms)) {
            try DataRate(parsing: "10001gbit")
        }
        // 0 is below the range, and said so: it was "is not a data rate", as for a misspelling.
        #expect(throws: UnitParseError(input: "0", expected: "a data rate from 1bit to 10000gbit (0 would never move a byte; leave the rate out for no limit)",
                                       allowedForms: DataRate.allowedForms)) {
            try DataRate(parsing: "0")
        }
        #expect(DataRate(bitsPerSecond: 1e30).description == "1e+21gbit", "a library caller's rate prints without trapping")
    }

    @Test func ratesPrintBackInAParseableForm() throws {
        for text in ["256kbit", "2mbit", "1gbit", "1.5mbit"] {
            #expect(try DataRate(parsing: DataRate(parsing: text).description) == DataRate(parsing: text))
        }
    }

    @Test(arguments: [("2%", 0.02), ("0.5%", 0.005), ("100%", 1.0), ("0%", 0.0)] as [(String, Double)])
    func percentages(text: String, fraction: Double) throws {
        #expect(try Probability(parsing: text).fraction == fraction)
    }

    /// A percentage is shown as what it is: a small loss is not 0%, an uncertain one not 100%.
    @Test(arguments: ["2%", "0.5%", "0.001%", "0.0001%", "0.000001%", "99.9999%", "100%", "0%"])
    func percentagesAreShownAsWritten(text: String) throws {
        #expect(try Probability(parsing: text).description == text)
    }

    @Test(arguments: ["1", "0.02", "101%", "-1%", "%"])
    func bareNumbersAndOutOfRangePercentagesAreRefused(text: String) {
        #expect(throws: UnitParseError.self) { try Probability(parsing: text) }
    }

    @Test(arguments: [("1400", 1400), ("64KB", 64_000), ("1KiB", 1024), ("1MiB", 1_048_576), ("1.5KB", 1500)] as [(String, Int)])
    func byteCounts(text: String, bytes: Int) throws {
        #expect(try ByteCount(parsing: text).bytes == bytes)
    }

    @Test func fractionalBytesAreRefused() {
        #expect(throws: UnitParseError.self) { try ByteCount(parsing: "1.5") }
    }

    @Test func durationsPrintCompactly() {
        #expect(Duration.milliseconds(30).compactDescription == "30ms")
        #expect(Duration.milliseconds(1500).compactDescription == "1.5s")
        #expect(Duration.microseconds(250).compactDescription == "250us")
        #expect(Duration.zero.compactDescription == "0")
    }
}

@Suite("Endpoints")
struct EndpointTests {
    @Test func parsesIPv4IPv6AndNames() throws {
        #expect(try Endpoint(parsing: "127.0.0.1:8080") == Endpoint(host: "127.0.0.1", port: 8080))
        #expect(try Endpoint(parsing: "[::1]:443") == Endpoint(host: "::1", port: 443))
        #expect(try Endpoint(parsing: "localhost:0") == Endpoint(host: "localhost", port: 0))
        #expect(Endpoint(host: "::1", port: 80).description == "[::1]:80")
    }

    /// The shorthand IPv4 forms the socket layer takes mean a dotted quad, and are read as it
    /// (QA 49: `--listen 127.1:0` bound 127.0.0.1 and was warned about as not loopback).
    @Test(arguments: ["127.1", "2130706433", "0x7f000001", "127.000.000.001", "127.0.1"])
    func shorthandIPv4IsTheAddressItMeans(host: String) throws {
        let endpoint = try Endpoint(parsing: host + ":80")
        #expect(endpoint == Endpoint(host: "127.0.0.1", port: 80) && endpoint.isLoopback, "\(endpoint)")
    }

    @Test func namesAndFullAddressesStayAsWritten() throws {
        #expect(try Endpoint(parsing: "1e100.net:80").host == "1e100.net")
        #expect(try Endpoint(parsing: "10.0.0.1:80").host == "10.0.0.1")
        #expect(try Endpoint(parsing: "0.0.0.0:80").host == "0.0.0.0")
    }

    /// A host no resolver could take is refused with why, where it is written (QA 61: it failed
    /// when connecting, "does not resolve", with no place named).
    @Test(arguments: [("host name:80", "'host name' is not a host name: a space cannot be in one"),
                      ("1.2.3.4.5:80", "'1.2.3.4.5' is not an IPv4 address"),
                      ("a..b:80", "labels of 1 to 63 characters"), ("[example.com]:80", "in brackets is not an IPv6 address"),
                      ("ex!ample.com:80", "'!' cannot be in one")])
    func refusesHostsNoResolverTakes(text: String, problem: String) {
        do {
            _ = try Endpoint(parsing: text)
            Issue.record("\(text) parsed")
        } catch let error as UnitParseError {
            #expect(error.expected.contains(problem), "\(error.expected)")
        } catch {
            Issue.record("\(error)")
        }
        #expect((try? Endpoint(parsing: "my_host-1.example.com.:80")) != nil)
    }

    @Test(arguments: ["8080", "host:", ":80", "host:99999", "::1:80", "[::1]80", "host:port"])
    func refusesMalformedAddresses(text: String) {
        #expect(throws: UnitParseError.self) { try Endpoint(parsing: text) }
    }

    @Test func knowsLoopback() {
        #expect(Endpoint(host: "127.0.0.1", port: 1).isLoopback)
        #expect(Endpoint(host: "127.8.0.3", port: 1).isLoopback)
        #expect(Endpoint(host: "::1", port: 1).isLoopback)
        #expect(Endpoint(host: "localhost", port: 1).isLoopback)
        #expect(Endpoint(host: "::ffff:127.0.0.1", port: 1).isLoopback)
        #expect(Endpoint(host: "0:0:0:0:0:0:0:1", port: 1).isLoopback)
        #expect(!Endpoint(host: "::ffff:10.0.0.1", port: 1).isLoopback)
        #expect(!Endpoint(host: "::", port: 1).isLoopback)
        #expect(!Endpoint(host: "fe80::1", port: 1).isLoopback)
        #expect(!Endpoint(host: "0.0.0.0", port: 1).isLoopback)
        #expect(!Endpoint(host: "192.168.1.2", port: 1).isLoopback)
    }
}

/// Counts in the words a person reads.
@Suite("counted nouns")
struct CountedTests {
    @Test func oneIsSingularAndEveryOtherCountPlural() {
        #expect(counted(1, "connection") == "1 connection")
        #expect(counted(0, "connection") == "0 connections")
        #expect(counted(2, "client connection") == "2 client connections")
        #expect(counted(3, "proxy", plural: "proxies") == "3 proxies")
    }
}
