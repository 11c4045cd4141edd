/**
 * List cursors as the admin API and CLI receive them: the domain's list functions take a decoded
 * `Cursor`; how it is encoded is the store's (src/store/pagination.ts). Re-exported here so src/http
 * reads cursors through the domain, never from src/store (docs/layers.md).
 */
export { decodeCursor, type Cursor } from '../store/pagination.js';
