/// What the agent's dialog says of a request: a title that names what it does and for which
/// program ("Unlock Meander"), a heading with the program as the system vouches for it, and
/// the program's own reason beneath (its words, in the person's language). A context is an
/// identifier and never appears; its label (the program's words for it) may.
struct DialogWords {
    let title: String
    let heading: String
    let description: String?

    init(_ kind: AgentRequest.Kind, _ application: AskingApplication, reason: String?, label: String?) {
        switch kind {
        case .unlock:
            title = AgentStrings.unlockTitle(application.shortName)
            heading = AgentStrings.unlockHeading(application.displayName)
        case .stepUp:
            title = AgentStrings.stepUpTitle(application.shortName)
            heading = AgentStrings.stepUpHeading(application.displayName)
        case .reveal:
            title = AgentStrings.revealTitle(application.shortName, label: label)
            heading = AgentStrings.revealHeading(application.displayName, label: label)
        case let .setEnabled(on):
            title = AgentStrings.setEnabledTitle(application.shortName, on: on)
            heading = AgentStrings.setEnabledHeading(application.displayName, on: on)
        }
        description = reason
    }
}
