import ArgumentParser
import NetsimCore
import NetsimLink

/// `--dns-delay` and `--dns-fail`: how netsim's resolvers misbehave (the shell's DNS server, the
/// forward proxy's lookups). A profile with a DNS delay (`high-latency-dns`) sets the delay
/// unless `--dns-delay` does.
struct DNSFaultOptions: ParsableArguments {
    @Option(name: .customLong("dns-delay"), help: ArgumentHelp("Delay every DNS answer (and failure) by this long. Network Link Conditioner's High Latency DNS is 3s. Example: --dns-delay 3s", valueName: "duration"), transform: parseDuration)
    var delay: Duration?

    @Option(name: .customLong("dns-fail"), help: ArgumentHelp("Fail every lookup: nxdomain (the name does not exist), servfail (the resolver is broken) or timeout (no answer at all). Example: --dns-fail servfail", valueName: "how"), transform: parseDNSFailure)
    var fail: DNSFailure?

    /// The faults, with `profile`'s DNS delay under an explicit --dns-delay.
    func faults(profile: LinkProfile?) -> DNSFaults {
        DNSFaults(delay: delay ?? profile?.dnsDelay ?? .zero, failure: fail)
    }
}

func parseDNSFailure(_ text: String) throws -> DNSFailure {
    guard let failure = DNSFailure(rawValue: text.lowercased()) else {
        throw ValidationError("'\(text)' is not a DNS failure; write \(DNSFailure.allowedForms)")
    }
    return failure
}

/// `netsim shell`'s DNS flags: the names its resolver answers, and the faults.
struct ShellDNSOptions: ParsableArguments {
    @Option(name: .customLong("dns"), help: ArgumentHelp("Answer NAME with NETSIM_HOST's addresses (host) or ADDRESS (it must be NETSIM_HOST's own: the packet path delivers nowhere else). Repeatable; *.NAME covers every name below; any other name gets NXDOMAIN. Example: --dns api.test=host", valueName: "name=host"), transform: { try DNSMapping(parsing: $0) })
    var names: [DNSMapping] = []

    @OptionGroup var faults: DNSFaultOptions
}
