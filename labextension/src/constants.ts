/** Names shared by the viewer, the commands and the MIME renderer. */

export const FACTORY = 'Replay Enclave Certificate';
export const FILE_TYPE = 'replay-enclave-certificate';
export const BUNDLE_FILE_TYPE = 'replay-enclave-certificate-bundle';
export const MIME_TYPE = 'application/vnd.replay-enclave.certificate+json';
