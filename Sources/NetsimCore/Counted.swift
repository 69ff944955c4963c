/// `1 connection`, `2 connections`, `0 connections`: a count and its noun, for messages that
/// show a number a person reads (the log said "1 connections open").
/// - Parameter plural: for a noun whose plural is not `noun + "s"`.
public func counted(_ count: Int, _ noun: String, plural: String? = nil) -> String {
    "\(count) " + (count == 1 ? noun : plural ?? noun + "s")
}
