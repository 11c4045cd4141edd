/**
 * The store's record and filter types that the outer layers name (routes' query types, the signing
 * hook's app): src/http imports them from here, never from src/store (docs/layers.md). Types only;
 * the records stay defined once, in src/store/records.ts and the repositories.
 */
export type { AppRecord, BanType } from '../store/records.js';
export type { AuditFilter } from '../store/repositories/admin.js';
export type { LicenseFilter } from '../store/repositories/licenses.js';
