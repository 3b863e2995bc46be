import Localization

/// `fingerseal doctor`: what the service sees of the caller's setup, each finding a sentence and
/// each fix another. The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/DoctorMessages.swift).
extension Messages {
    // Doctor (`fingerseal doctor`): what the service sees of the caller's setup. Each finding
    // is one sentence, each fix another.
    public static var doctorSealedToTPM: String { tr("Your PIN and your device key are sealed to this computer's TPM.") }
    public static var doctorPINInsideTPMLockout: String { tr("Your PIN is sealed inside the TPM's lockout, which every account on this computer shares: until you enter it once, your wrong PINs count towards that lockout, and while it lasts your PIN is refused.") }
}
