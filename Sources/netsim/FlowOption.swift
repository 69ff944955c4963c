import ArgumentParser
import NetsimPcap

/// `--flow` of `netsim replay` and `netsim profile`: which of a capture's TCP flows to use.
/// Parsed with the command line, so a bad selector is a usage error (exit 64) naming the flag,
/// as a bad `--speed` is, not a failed run (QA 52: exit 1, the code for a capture that cannot
/// be used). Whether the flows exist is the capture's to say, once it is read.
struct FlowOption: ParsableArguments {
    @Option(help: ArgumentHelp("Only these flows: \(FlowSelector.allowedForms). Example: --flow 2", valueName: "selector"),
            transform: { try FlowSelector(parsing: $0) })
    var flow: FlowSelector?

    /// The flows chosen: all of them without `--flow`.
    var selector: FlowSelector { flow ?? .all }
}
