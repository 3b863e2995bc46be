import SharedMessages

/// How a scan prompt says to get out of the scan; each pairs with "Place your finger on the
/// reader" into one whole sentence (`Messages.placeFinger(swipe:cancelHint:)`).
public enum ScanHint: Sendable {
    case none
    /// "or press Ctrl-C to cancel"
    case pressCtrlC
    /// "or press Ctrl-C to use your password" (a terminal PAM host)
    case pressCtrlCForPassword
    /// "or use your password" (a graphical host)
    case orUsePassword
    /// "or type your PIN and press Enter. Enter alone goes straight to the PIN."
    case fingerOrPIN
    /// "or type your PIN" (an application's dialog, whose field and buttons say the rest)
    case orTypePIN
}

/// What fingerseal was doing when the system failed it (`Messages.systemFailure`): each one
/// whole sentence in the catalog, never a verb phrase glued into one.
public enum SystemStep: Sendable, Equatable {
    case checkAccountPassword, listenForBrowser, startScan, scan, lookUpAccount, finishRequest, useReader, derivePINKey
    case readFile(String)
    case createKey, deriveKey, encryptSecret, measurePINCost
    /// The key a sign-in's tokens are bound to (RFC 9449).
    case makeProofKey
    case openVault, readVault, listVault, saveVault, deleteVault, deleteOldVault
    case readDeviceKey, writeDeviceKey, removeOldDeviceKey
    case readLockout, saveLockout
    case openAuditTrail, readAuditTrail, writeAuditTrail
}

/// Every sentence a person sees, in one table: plain sentences a screen reader can speak,
/// meaning never in colour or symbols alone. Each is looked up in the message catalog in the
/// language of the request being served (po/README).
///
/// The table is written by domain, each an extension in Support/Messages/ (public: the core,
/// the flows, the identity client and the tests say them), and the sentences only the broker
/// says in the broker's own extensions (Sources/Broker/Messages/).
public enum Messages {
    /// Text from elsewhere as it goes inside one of our sentences (`SharedMessages.embedded`).
    public static func embedded(_ text: String) -> String { SharedMessages.embedded(text) }

    // Input
    public static var cancelled: String { SharedMessages.cancelled }
    public static var noTerminal: String { SharedMessages.noTerminal }
}
