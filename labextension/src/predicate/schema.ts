/**
 * The predicate's JSON Schema check, judged as the Python verifier judges it
 * (``jsonschema`` Draft 2020-12 over the schema with sorted keys, in
 * ``ledger/certificates/_schema.py`` ``_schema_problems``), so both name the same first
 * problem. The schemas are the enclave's own (``schemas.json``, written by
 * ``scripts/export-predicate-schema.py``); ajv validates with every error collected, and
 * its errors are reshaped the way jsonschema reports:
 *
 * * a failing ``anyOf`` / ``oneOf`` is one error at its instance (its branches' errors
 *   are dropped); a ``propertyNames`` failure is the name's ``pattern`` error;
 * * patterns use Python's ``re.search``: ``$`` also matches before a final newline;
 * * ``uniqueItems`` compares every item, whatever its type (ajv skips items of the wrong
 *   type when it knows the item type; the schema copy given to ajv hides it);
 * * problems are sorted by instance path (its parts compared as strings), ties in the
 *   order of the schema's sorted keywords.
 *
 * A problem reads ``location: keyword``; the location holds schema-shaped names and
 * indices only (any other key is ``*``), never a value.
 */

import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';

import SCHEMAS from './schemas.json';

// Python's _SAFE_NAME.match: its ``$`` admits a final newline too
const SAFE_NAME = /^[a-z_][a-z0-9_]{0,40}\n?$/;

type Json = unknown;

/** A pattern as Python's ``re.search`` reads it: a final ``$`` also matches before "\n". */
function pythonPattern(pattern: string, flags: string): RegExp {
  const source = /(^|[^\\])\$$/.test(pattern) ? `${pattern.slice(0, -1)}\\n?$` : pattern;
  return new RegExp(source, flags);
}
pythonPattern.code = 'pythonPattern';

/** The schema as ajv should see it: item types hidden below ``uniqueItems``. */
function forAjv(schema: Json): Json {
  if (Array.isArray(schema)) {
    return schema.map(forAjv);
  }
  if (typeof schema !== 'object' || schema === null) {
    return schema;
  }
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = forAjv(value);
  }
  if (out.uniqueItems === true && typeof out.items === 'object' && out.items !== null) {
    out.items = { allOf: [out.items] };
  }
  return out;
}

let validators: Map<string, ValidateFunction> | null = null;

function validatorFor(predicateType: string): ValidateFunction {
  if (validators === null) {
    const ajv = new Ajv2020({ allErrors: true, strict: false, code: { regExp: pythonPattern } });
    validators = new Map();
    for (const [type, schema] of Object.entries(SCHEMAS as Record<string, Json>)) {
      validators.set(type, ajv.compile(forAjv(schema) as object));
    }
  }
  const validate = validators.get(predicateType);
  if (validate === undefined) {
    throw new Error('unknown predicate type');
  }
  return validate;
}

function pointerParts(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map(p => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function location(instance: Json, parts: string[]): string {
  const out: string[] = [];
  let node: Json = instance;
  for (const part of parts) {
    if (Array.isArray(node)) {
      out.push(part); // an index
      node = node[Number(part)];
    } else {
      out.push(SAFE_NAME.test(part) ? part : '*');
      node = (node as Record<string, Json>)[part];
    }
  }
  return '/' + out.join('/');
}

function compareParts(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) {
      return a[i] < b[i] ? -1 : 1;
    }
  }
  return a.length - b.length;
}

interface Found {
  parts: string[];
  keyword: string; // as jsonschema names the failing validator
  rank: string; // the keyword of the schema node that yielded it
}

function reshape(errors: ErrorObject[]): Found[] {
  const collapsed = errors
    .filter(e => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .map(e => e.schemaPath + '/');
  const found: Found[] = [];
  for (const e of errors) {
    if (e.keyword === 'propertyNames' || collapsed.some(prefix => e.schemaPath.startsWith(prefix))) {
      continue;
    }
    const viaNames = e.schemaPath.includes('/propertyNames/');
    found.push({ parts: pointerParts(e.instancePath), keyword: e.keyword, rank: viaNames ? 'propertyNames' : e.keyword });
  }
  return found.sort((a, b) => compareParts(a.parts, b.parts) || (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
}

/** Every schema violation of ``predicate`` under its type's schema, first problem first. */
export function schemaProblems(predicate: Json, predicateType: string): string[] {
  const validate = validatorFor(predicateType);
  if (validate(predicate)) {
    return [];
  }
  return reshape(validate.errors ?? []).map(f => `${location(predicate, f.parts)}: ${f.keyword}`);
}
