import SystemKit

extension Request {
    /// The wire name of the first text field of this request that holds a control character
    /// (`pam.service`, `opt.device`, `arg`, …), or nil when none does: every field a client
    /// fills in, so that one rule covers them all (the broker refuses such a request,
    /// `Dispatcher.refuseControlCharacters`). What it would do there: a line break in a
    /// service name or a tty forges a line of the broker's log, an escape in an option value
    /// or the name an application gives itself drives a terminal that shows it. No client
    /// needs one: names, paths, option values, a language and a time zone are plain text.
    public var fieldWithControlCharacters: String? {
        let pam = origin.pamItems, application = origin.application
        let named: [(field: String, text: String?)] = [
            ("pam.user", pam?.user), ("pam.service", pam?.service), ("pam.tty", pam?.tty), ("pam.rhost", pam?.rhost),
            ("pam.ruser", pam?.ruser), ("pam.xdisplay", pam?.xdisplay), ("ticket", ticket), ("language", language),
            ("time-zone", timeZone), ("app.bus-name", application?.busName), ("app.executable", application?.executable),
            ("app.id", application?.appID), ("app.name", application?.name),
        ]
        for (field, text) in named {
            if let text, ControlCharacters.found(in: text) { return field }
        }
        if origin.moduleArguments.contains(where: ControlCharacters.found(in:)) { return "option" }
        for pair in options.pairs where ControlCharacters.found(in: pair.value) { return OptionValues.prefix + pair.field }
        if arguments.contains(where: ControlCharacters.found(in:)) { return "arg" }
        return nil
    }
}
