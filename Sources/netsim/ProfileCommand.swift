import ArgumentParser
import Foundation
import NetsimPcap

/// `netsim profile`: what network a capture went through, per flow, and a link block for it.
struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Infer the network from a capture: round trip, throughput, loss, idle gaps, close.",
        discussion: """
            Reads pcap or pcapng (Ethernet, Linux cooked SLL/SLL2, raw IP, NULL/loopback; IPv4 and \
            IPv6) and reports, per TCP flow: the round trip (handshake, and data to ACK each way), \
            throughput each way, retransmissions and loss rate (counted as Wireshark does), idle \
            gaps and how the connection closed. With --scn it prints a `link:` block to paste into \
            a scenario, so a field capture becomes a reproducible test.

            Examples:
              netsim profile Fixtures/pcap/zeek-http-206_example_c.pcap
              netsim profile capture.pcapng --flow :443 --scn >> my-scenario.scn
            """)

    @Argument(help: ArgumentHelp("The capture file (pcap or pcapng).", valueName: "capture"))
    var capture: String

    @OptionGroup var flows: FlowOption

    @Flag(help: "Print only a scenario `link:` block inferred from the selected flows.")
    var scn = false

    func run() throws {
        do {
            let loaded = try Capture.load(path: capture)
            let profiles = try flows.selector.select(from: loaded).map(FlowProfile.init)
            if scn {
                print(LinkSuggestion(profiles).scn(capture: (capture as NSString).lastPathComponent))
            } else {
                print(ProfileReport.text(profiles, capture: loaded))
            }
        } catch let error as PcapError {
            throw RuntimeError(error.message)
        }
    }
}
