/// Lets an option take a negative value as typed: `--speed -1`, `--latency -5ms`.
///
/// The argument parser reads a word starting with `-` as an option, so `replay --speed -1` said
/// `Missing value for '--speed <factor>'`, hiding the real problem (the range `--speed` allows)
/// behind a parsing detail. netsim has no single-dash options, so a word that is `-` and then a
/// digit or a point can only be a value: it is joined to the long option before it
/// (`--speed=-1`) and the option's own check then says what it allows. Nothing after `--` (a
/// command and its arguments, for `netsim shell`) is touched.
enum NegativeValues {
    static func joined(_ arguments: [String]) -> [String] {
        var result: [String] = []
        result.reserveCapacity(arguments.count)
        var passthrough = false
        for argument in arguments {
            if !passthrough, looksNegative(argument), let previous = result.last,
               previous.hasPrefix("--"), previous.count > 2, !previous.contains("=") {
                result[result.count - 1] = previous + "=" + argument
                continue
            }
            if argument == "--" { passthrough = true }
            result.append(argument)
        }
        return result
    }

    private static func looksNegative(_ word: String) -> Bool {
        let characters = Array(word.prefix(2))
        return characters.count == 2 && characters[0] == "-" && (characters[1].isNumber || characters[1] == ".")
    }
}
