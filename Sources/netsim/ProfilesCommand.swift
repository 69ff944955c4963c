import Foundation
import ArgumentParser
import NetsimCore
import NetsimLink

/// `netsim profiles`: the named link presets.
struct ProfilesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profiles",
        abstract: "List the named link profiles (after Apple's Network Link Conditioner presets).")

    func run() {
        let rows = LinkProfile.all.map { profile -> [String] in
            let link = profile.link
            return [
                profile.name,
                rate(link.down.bandwidth) + " / " + rate(link.up.bandwidth),
                link.down.latency.compactDescription + " / " + link.up.latency.compactDescription,
                loss(link.down.loss) + " / " + loss(link.up.loss),
                profile.summary,
            ]
        }
        print(renderTable(header: ["profile", "down / up rate", "down / up delay", "down / up loss", "about"], rows: rows, width: terminalTableWidth()))
        print("\nUse with --profile NAME; explicit flags (e.g. --latency) override the profile.")
    }

    private func rate(_ rate: DataRate?) -> String { rate?.description ?? "unlimited" }

    private func loss(_ model: LossModel?) -> String {
        guard let model else { return "0%" }
        return Probability(fraction: model.averageLoss).description
    }
}
