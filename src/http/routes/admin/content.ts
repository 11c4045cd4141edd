import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import {
  deleteFile, deleteVariable, getFile, getVariable, listFiles, listVariables, parseBoolean, putVariable, replaceFileContent, updateFile, uploadFile,
  type FileMetaInput,
} from '../../../domain/admin/content.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity } from '../../admin-plugin.js';
import { FILE_NAME, MIME_TYPE, variableName, variableValue } from '../../admin-schemas.js';
import { errors, ref, uuid } from '../../schemas.js';

/** Uploads are the raw body, any media type; the document shows application/octet-stream. */
const upload = { content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } } as const;

const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const variableParams = { type: 'object', required: ['app_id', 'name'], properties: { app_id: uuid, name: variableName } } as const;
const fileParams = { type: 'object', required: ['app_id', 'file_id'], properties: { app_id: uuid, file_id: uuid } } as const;

export function variableRoutes(app: FastifyInstance, s: Services): void {
  const tags = ['admin: variables'];
  app.put<{ Params: { app_id: string; name: string }; Body: { value: string } }>('/apps/:app_id/variables/:name', {
    schema: {
      operationId: 'putVariable', tags, security: adminSecurity, summary: 'Create or replace a variable', params: variableParams,
      body: { type: 'object', required: ['value'], additionalProperties: false, properties: { value: variableValue } },
      response: { 200: { ...ref('Variable'), description: 'The variable' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => putVariable(acting(s, request), request.params.app_id, request.params.name, request.body.value),
  });
  app.get<{ Params: { app_id: string } }>('/apps/:app_id/variables', {
    schema: { operationId: 'listVariables', tags, security: adminSecurity, summary: 'List variables', params: appParams, response: { 200: { ...ref('VariableList'), description: 'Every variable' }, ...errors(401, 404, 422) } },
    handler: async (request) => ({ items: await listVariables(s, request.params.app_id), next_cursor: null }),
  });
  app.get<{ Params: { app_id: string; name: string } }>('/apps/:app_id/variables/:name', {
    schema: { operationId: 'getVariable', tags, security: adminSecurity, summary: 'Get a variable', params: variableParams, response: { 200: { ...ref('Variable'), description: 'The variable' }, ...errors(401, 404, 422) } },
    handler: async (request) => getVariable(s, request.params.app_id, request.params.name),
  });
  app.delete<{ Params: { app_id: string; name: string } }>('/apps/:app_id/variables/:name', {
    schema: { operationId: 'deleteVariable', tags, security: adminSecurity, summary: 'Delete a variable', params: variableParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) } },
    handler: async (request, reply) => {
      await deleteVariable(acting(s, request), request.params.app_id, request.params.name);
      return reply.code(204).send();
    },
  });
}

export function fileRoutes(app: FastifyInstance, s: Services, maxUploadBytes: number): void {
  const tags = ['admin: files'];
  // Uploads are the raw request body, streamed to storage as it arrives, whatever its Content-Type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  app.post<{ Params: { app_id: string }; Querystring: { name: string; mime_type?: string; is_encrypted?: string } }>('/apps/:app_id/files', {
    schema: {
      operationId: 'uploadFile', tags, security: adminSecurity, summary: 'Upload a file (raw body, streamed; SHA-256 computed on the way)', params: appParams,
      description: 'The request body is the file content, whatever its Content-Type; at most MAX_UPLOAD_BYTES (413 beyond).',
      querystring: {
        type: 'object', required: ['name'],
        properties: { name: FILE_NAME, mime_type: MIME_TYPE, is_encrypted: { type: 'string', enum: ['true', 'false', '1', '0'] } },
      },
      documentedBody: upload,
      response: { 201: { ...ref('StoredFile'), description: 'Stored' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request, reply) => {
      const { name, mime_type, is_encrypted } = request.query;
      const meta = { name, ...(mime_type !== undefined && { mime_type }), ...(is_encrypted !== undefined && { is_encrypted: parseBoolean('querystring.is_encrypted', is_encrypted)! }) };
      const body = (request.body as Readable | undefined) ?? emptyBody();
      const file = await uploadFile(acting(s, request), request.params.app_id, meta, body, maxUploadBytes);
      return reply.code(201).send(file);
    },
  });
  app.put<{ Params: { app_id: string; file_id: string } }>('/apps/:app_id/files/:file_id/content', {
    schema: {
      operationId: 'replaceFileContent', tags, security: adminSecurity, summary: 'Replace a file’s content, keeping its id (raw body, streamed)', params: fileParams,
      description: 'The request body is the new content, whatever its Content-Type; at most MAX_UPLOAD_BYTES (413 beyond).',
      documentedBody: upload,
      response: { 200: { ...ref('StoredFile'), description: 'Stored' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) =>
      replaceFileContent(acting(s, request), request.params.app_id, request.params.file_id, (request.body as Readable | undefined) ?? emptyBody(), maxUploadBytes),
  });
  app.get<{ Params: { app_id: string } }>('/apps/:app_id/files', {
    schema: { operationId: 'listFiles', tags, security: adminSecurity, summary: 'List files', params: appParams, response: { 200: { ...ref('StoredFileList'), description: 'Every file' }, ...errors(401, 404, 422) } },
    handler: async (request) => ({ items: await listFiles(s, request.params.app_id), next_cursor: null }),
  });
  app.get<{ Params: { app_id: string; file_id: string } }>('/apps/:app_id/files/:file_id', {
    schema: { operationId: 'getFile', tags, security: adminSecurity, summary: 'Get a file’s metadata', params: fileParams, response: { 200: { ...ref('StoredFile'), description: 'The file' }, ...errors(401, 404, 422) } },
    handler: async (request) => getFile(s, request.params.app_id, request.params.file_id),
  });
  app.delete<{ Params: { app_id: string; file_id: string } }>('/apps/:app_id/files/:file_id', {
    schema: { operationId: 'deleteFile', tags, security: adminSecurity, summary: 'Delete a file and its content', params: fileParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) } },
    handler: async (request, reply) => {
      await deleteFile(acting(s, request), request.params.app_id, request.params.file_id);
      return reply.code(204).send();
    },
  });
}

/** File metadata changes are JSON, so they live outside the raw-body scope of uploads. */
export function fileMetaRoutes(app: FastifyInstance, s: Services): void {
  app.patch<{ Params: { app_id: string; file_id: string }; Body: Partial<FileMetaInput> }>('/apps/:app_id/files/:file_id', {
    schema: {
      operationId: 'updateFile', tags: ['admin: files'], security: adminSecurity, summary: 'Rename a file or change its media type or encryption flag', params: fileParams,
      body: {
        type: 'object', additionalProperties: false, minProperties: 1,
        properties: { name: FILE_NAME, mime_type: MIME_TYPE, is_encrypted: { type: 'boolean' } },
      },
      response: { 200: { ...ref('StoredFile'), description: 'The file as changed' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => updateFile(acting(s, request), request.params.app_id, request.params.file_id, request.body),
  });
}

async function* emptyBody(): AsyncIterable<Buffer> {}
