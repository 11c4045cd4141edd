import type { FastifyInstance } from 'fastify';
import { contentStream, fileForDownload } from '../../../domain/files.js';
import type { Services } from '../../../domain/services.js';
import type { Downloads } from '../../downloads.js';
import { errorBody } from '../../errors.js';
import { header, userCredentials } from '../../client-plugin.js';
import { contentDisposition, parseRange } from '../../range.js';
import { noteDownload } from '../../signing.js';
import { errors, userAuthHeaders, userSecurity, uuid } from '../../schemas.js';

const binary = { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } as const;
const downloadHeaders = ['ContentDisposition', 'ETag', 'AcceptRanges', 'ContentLength'];

/** GET /files/{file_id}/download (SPEC 4.6): streamed, resumable (Range), verifiable (ETag = SHA-256). */
export function fileRoutes(app: FastifyInstance, s: Services, downloads: Downloads): void {
  app.get<{ Params: { file_id: string } }>('/files/:file_id/download', {
    exposeHeadRoute: false,
    config: { limited: 'legacy_auth' },
    schema: {
      operationId: 'downloadFile',
      tags: ['client'],
      summary: 'Download a file of the application',
      description: 'Streamed and resumable: one byte range per request (RFC 9110); the ETag is the hex SHA-256 of the whole file.',
      security: userSecurity,
      documentedHeaders: {
        type: 'object',
        properties: {
          ...userAuthHeaders.properties,
          range: { type: 'string', description: 'One byte range, bytes=<first>-[<last>] or bytes=-<suffix>; anything else is ignored (the whole file is sent)', examples: ['bytes=1048576-'] },
          'if-range': { type: 'string', description: 'The ETag of an earlier answer: the range is honoured only if the file is still the same, else the whole file is sent' },
        },
      },
      params: { type: 'object', required: ['file_id'], properties: { file_id: uuid } },
      response: {
        200: { description: 'The file content', content: binary },
        206: { description: 'The requested byte range', content: binary },
        ...errors(401, 403, 404, 416, 422, 429),
      },
      documentedResponseHeaders: { 200: downloadHeaders, 206: [...downloadHeaders, 'ContentRange'], 416: ['ContentRange', 'ContentDisposition', 'ETag', 'AcceptRanges'] },
    },
    handler: async (request, reply) => {
      const file = await fileForDownload(s, request.ctx, userCredentials(request, request.raw.socket), request.params.file_id);
      const etag = `"${file.sha256}"`;
      noteDownload(request, file.sha256); // a signed 200/206 covers the whole file's hash and the Content-Range, not the stream
      const ifRange = header(request, 'if-range');
      const range = ifRange !== undefined && ifRange !== etag ? { kind: 'full' as const } : parseRange(header(request, 'range'), file.size);
      reply
        .header('content-type', 'application/octet-stream')
        .header('content-disposition', contentDisposition(file.name))
        .header('etag', etag)
        .header('accept-ranges', 'bytes')
        .header('cache-control', 'private, no-store');
      if (range.kind === 'unsatisfiable') {
        return reply.code(416).header('content-range', `bytes */${file.size}`).type('application/json').send(errorBody('range_not_satisfiable'));
      }
      const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, file.size - 1];
      if (range.kind === 'partial') reply.code(206).header('content-range', `bytes ${start}-${end}/${file.size}`);
      reply.header('content-length', String(end - start + 1));
      const stream = contentStream(s, file, start, end);
      downloads.watch(stream, reply.raw, request.log);
      return reply.send(stream);
    },
  });
}
