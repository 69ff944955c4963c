/// Something that stops a run before or while it starts.
public enum RunnerError: Error, CustomStringConvertible {
    /// Input the scenario or the command line got wrong (exit code 2).
    case invalid(String)
    /// The harness itself failed (exit code 1).
    case failed(String)

    public var description: String {
        switch self {
        case .invalid(let text), .failed(let text): text
        }
    }
}
