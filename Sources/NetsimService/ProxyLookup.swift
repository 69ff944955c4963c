import NIOCore
import NetsimCore

/// The forward proxy's DNS faults: before it connects a destination by name, the proxy waits the
/// faults' delay and, with a failure, gives up as a real proxy whose resolver failed does, so
/// relay-mode users see DNS faults too (`netsim proxy --dns-delay 3s`, `--dns-fail servfail`).
///
/// Address literals are never looked up, so no DNS fault touches them. Each lookup is in the
/// event log as a `dns_query` and a `dns_answer` (transport `proxy`); the name itself is then
/// resolved by the system as before (the answer says so).
struct ProxyLookup: Sendable {
    let faults: DNSFaults
    /// How long the proxy waits for an answer that never comes (`timeout`) before it answers 504.
    let timeout: Duration
    let eventLog: EventLog

    /// Why the proxy did not reach a destination: what it tells the client.
    struct Failure: Error {
        var status: String
        var body: String
    }

    /// Succeeds when the proxy may go on to connect `host`, after the delay; fails with the
    /// ``Failure`` to answer otherwise.
    func lookUp(_ host: String, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard !faults.isEmpty, !Self.isAddressLiteral(host) else { return eventLoop.makeSucceededVoidFuture() }
        let start = eventLog.clock.now()
        eventLog.record(.dnsQuery(name: host, type: "A/AAAA", transport: "proxy"))
        let wait = faults.failure == .timeout ? timeout : faults.delay
        let (result, failure): (String, Failure?) = switch faults.failure {
        case nil:
            ("passed to the system resolver", nil)
        case .nxdomain:
            ("NXDOMAIN (--dns-fail nxdomain)",
             Failure(status: "502 Bad Gateway", body: "netsim proxy: cannot resolve \(host): NXDOMAIN, no such name (--dns-fail nxdomain)\n"))
        case .servfail:
            ("SERVFAIL (--dns-fail servfail)",
             Failure(status: "502 Bad Gateway", body: "netsim proxy: cannot resolve \(host): SERVFAIL, the resolver failed (--dns-fail servfail)\n"))
        case .timeout:
            ("no answer within \(timeout.compactDescription) (--dns-fail timeout)",
             Failure(status: "504 Gateway Timeout", body: "netsim proxy: cannot resolve \(host): no answer from DNS within \(timeout.compactDescription) (--dns-fail timeout)\n"))
        }
        let log = eventLog
        return eventLoop.scheduleTask(in: .nanoseconds(wait.nanoseconds)) {
            log.record(.dnsAnswer(name: host, type: "A/AAAA", result: result, after: log.clock.now() - start))
            if let failure { throw failure }
        }.futureResult
    }

    /// An IPv4 or IPv6 literal (`Endpoint` keeps IPv6 without brackets).
    static func isAddressLiteral(_ host: String) -> Bool {
        host.contains(":") || (host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." })
    }
}
