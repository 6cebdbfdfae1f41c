/**
 * Makes the vault's known-answer fixtures ONCE, with the code of the day: a vault as svcd stores it (the SQLite
 * file `vault.db` and a dump of its rows for PostgreSQL/MariaDB) and fixed crypto vectors. The tests only read
 * what this wrote (packages/server/test/vault/vault-known-answers.test.ts, .../storage/vault-fixture.test.ts);
 * every later version of svcd must open it. Never rerun it over a committed fixture: it refuses an existing
 * folder. A future format gets a new folder (vault-v2) next to the old one, which stays.
 *
 *   node --import tsx scripts/make-vault-fixture.ts [out-dir]   (default packages/server/test/fixtures/vault-v1)
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { format } from 'prettier';
import {
  decryptValue,
  deriveKey,
  encryptValueWithNonce,
  openVaultKey,
  PRODUCTION_KDF,
  wrapDataKeyWithNonce,
  type KdfParams,
} from '../packages/server/src/core/vault/vault-crypto.js';
import { VaultService } from '../packages/server/src/core/vault/vault-service.js';
import { openDatabase } from '../packages/server/src/storage/database.js';
import { openVaultStorage, VAULT_FILE_NAME } from '../packages/server/src/storage/open-vault-storage.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const outDir = join(ROOT, process.argv[2] ?? 'packages/server/test/fixtures/vault-v1');

/** Differs between NFC and NFD (ü, Ö, é): the vault is made with the NFD form, as a macOS keyboard types it. */
const PASSWORD_NFC = 'T\u00fcr-\u00d6ffner-\u00e9-42';
const PASSWORD_NFD = PASSWORD_NFC.normalize('NFD');
const ADMIN = { username: 'admin', groups: ['Administrators'] };
const ZOE = { username: 'Zo\u00eb', groups: ['Administrators', 'ops'] };
/** 2026-01-02T03:04:05.678Z, then one second per write. */
const START_MS = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

/** Fixed bytes named by a label, so the vectors' inputs are reproducible and distinct. */
const fixed = (label: string, length: number): Buffer =>
  createHash('sha256').update(`svc vault fixture: ${label}`).digest().subarray(0, length);
const utf8Hex = (text: string): string => Buffer.from(text, 'utf8').toString('hex');

/** JSON with every non-ASCII character escaped: no editor or tool can renormalise the strings. */
async function writeAsciiJson(path: string, value: unknown): Promise<void> {
  const text = JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  await writeFile(path, await format(text, { parser: 'json', printWidth: 120 }));
}

/** RFC 7914 section 12: scrypt test vectors (first 32 of their 64 bytes: svc derives 32). */
const RFC_7914 = [
  {
    password: '',
    salt: '',
    kdf: { algorithm: 'scrypt', N: 16, r: 1, p: 1 } as KdfParams,
    key_hex: '77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442',
  },
  {
    password: 'password',
    salt: 'NaCl',
    kdf: { algorithm: 'scrypt', N: 1024, r: 8, p: 16 } as KdfParams,
    key_hex: 'fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162',
  },
];

async function cryptoVectors() {
  const kdf = [];
  for (const vector of RFC_7914) {
    const key = await deriveKey(vector.password, Buffer.from(vector.salt), vector.kdf);
    if (key.toString('hex') !== vector.key_hex)
      throw new Error(`deriveKey disagrees with RFC 7914 (${vector.salt})`);
    kdf.push({
      source: 'RFC 7914 section 12',
      password_utf8_hex: utf8Hex(vector.password),
      salt_hex: Buffer.from(vector.salt).toString('hex'),
      kdf: vector.kdf,
      key_hex: vector.key_hex,
    });
  }
  const salt = fixed('salt', 16);
  const kek = await deriveKey(PASSWORD_NFC, salt, PRODUCTION_KDF);
  const kekFromNfd = await deriveKey(PASSWORD_NFD, salt, PRODUCTION_KDF);
  if (!kek.equals(kekFromNfd)) throw new Error('the NFC and NFD forms of the password derive different keys');
  for (const password of [PASSWORD_NFC, PASSWORD_NFD])
    kdf.push({
      source: `svc, password in ${password === PASSWORD_NFC ? 'NFC' : 'NFD'}`,
      password_utf8_hex: utf8Hex(password),
      salt_hex: salt.toString('hex'),
      kdf: PRODUCTION_KDF,
      key_hex: kek.toString('hex'),
    });

  const dataKey = fixed('data key', 32);
  const wrapNonce = fixed('wrap nonce', 12);
  const wrappedKey = wrapDataKeyWithNonce(kek, dataKey, wrapNonce);
  if (!(await openVaultKey(PASSWORD_NFD, { kdf: PRODUCTION_KDF, salt, wrappedKey }))?.equals(dataKey))
    throw new Error('the wrapped key does not open');

  const values = [
    { client_id: '', key: 'db-password', plaintext: 's3cr3t' },
    {
      client_id: 'client-1',
      key: 'api token',
      plaintext: 'line 1\nline 2 \u2014 Zo\u00eb \u7528\u6237 \ud83d\ude00',
    },
    { client_id: 'client-\u00e9', key: 'k\u00e9y', plaintext: 'x' },
  ].map((value, i) => {
    const nonce = fixed(`value nonce ${i}`, 12);
    const stored = encryptValueWithNonce(dataKey, value.plaintext, value.client_id, value.key, nonce);
    if (decryptValue(dataKey, stored, value.client_id, value.key) !== value.plaintext)
      throw new Error('a value does not open');
    return { ...value, nonce_hex: nonce.toString('hex'), stored };
  });

  return {
    about:
      'Known answers of the vault crypto (packages/server/src/core/vault/vault-crypto.ts), made once by ' +
      'scripts/make-vault-fixture.ts. Every version of svcd must reproduce them.',
    kdf,
    key_wrap: {
      password_utf8_hex: utf8Hex(PASSWORD_NFD),
      kdf: PRODUCTION_KDF,
      salt_hex: salt.toString('hex'),
      kek_hex: kek.toString('hex'),
      nonce_hex: wrapNonce.toString('hex'),
      data_key_hex: dataKey.toString('hex'),
      wrapped_key_base64: wrappedKey.toString('base64'),
    },
    values: { data_key_hex: dataKey.toString('hex'), vectors: values },
  };
}

/** The entries written through the service; one is deleted again and one replaced, as in real use. */
const ENTRIES = [
  { client_id: '', required_group: '', key: 'db-password', value: 's3cr3t-\u2713', type: 'secret' },
  {
    client_id: 'client-1',
    required_group: 'Administrators',
    key: 'api token',
    value: 'line 1\nline 2 \u2014 Zo\u00eb \u7528\u6237 \ud83d\ude00',
    type: 'text',
  },
  { client_id: 'client-1', required_group: '', key: 'to-delete', value: 'gone', type: 'string' },
  {
    client_id: 'client-1',
    required_group: 'ops',
    key: 'readme',
    value: '# Title\n\n*markdown*',
    type: 'markdown',
  },
  {
    client_id: 'client-\u00e9',
    required_group: '',
    key: 'k\u00e9y \ud83d\udd11',
    value: 'x',
    type: 'string',
  },
] as const;
const REPLACED = { index: 1, value: 'replaced: line 3 \u2014 \ud83d\ude00' } as const;

async function storedVault(work: string) {
  const settings = {
    db_type: 'sqlite',
    db_name: 'svcd.db',
    db_host: '',
    db_user: '',
    db_password: '',
  } as const;
  const main = await openDatabase(settings, { dataDir: work });
  const storage = await openVaultStorage(main, settings, work);
  let tick = 0;
  const clock = { now: () => new Date(START_MS + 1000 * tick++) };
  const service = new VaultService(storage.repository, clock, { kdf: PRODUCTION_KDF });
  await service.init(ADMIN, PASSWORD_NFD);
  const ids: number[] = [];
  for (const entry of ENTRIES)
    ids.push((await service.create(entry.required_group === 'ops' ? ZOE : ADMIN, entry)).id);
  const replacedId = ids[REPLACED.index] ?? 0;
  await service.update(ZOE, replacedId, { ...ENTRIES[REPLACED.index], value: REPLACED.value });
  const deletedId = ids[2] ?? 0;
  await service.delete(ADMIN, deletedId);
  const expected = [];
  for (const id of ids.filter((id) => id !== deletedId)) expected.push(await service.get(ZOE, id));
  await storage.close();
  await main.close();

  const file = join(work, VAULT_FILE_NAME);
  const db = new SQLite(file, { readonly: true });
  try {
    const rows = (table: string) => db.prepare(`select * from ${table} order by 1`).all();
    return {
      file,
      dump: {
        about:
          'The rows of a vault as svcd stored them (vault_key, vault_entries), made once by ' +
          'scripts/make-vault-fixture.ts through VaultService and SqlVaultRepository on SQLite; vault.db is ' +
          'the same vault as the SQLite file itself. Load the rows into a schema migrated up to `migrations`.',
        password_utf8_hex: utf8Hex(PASSWORD_NFD),
        migrations: db.prepare('select name from svcd_vault_migrations order by name').pluck().all(),
        vault_key: rows('vault_key'),
        vault_entries: rows('vault_entries'),
        deleted_id: deletedId,
        expected,
      },
    };
  } finally {
    db.close();
  }
}

async function main(): Promise<void> {
  if (
    await stat(outDir).then(
      () => true,
      () => false,
    )
  )
    throw new Error(
      `${outDir} exists: a committed fixture is never remade (make a new version folder instead)`,
    );
  const work = await mkdtemp(join(tmpdir(), 'svc-vault-fixture-'));
  try {
    const { file, dump } = await storedVault(work);
    await mkdir(outDir, { recursive: true });
    await copyFile(file, join(outDir, VAULT_FILE_NAME));
    await writeAsciiJson(join(outDir, 'vault-rows.json'), dump);
    await writeAsciiJson(join(outDir, 'crypto-vectors.json'), await cryptoVectors());
    console.log(`wrote ${outDir}`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
