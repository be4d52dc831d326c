export { ARTIFACTS_DIR, artifactPath } from './artifacts';
