import { createECDH, createHash, createPrivateKey } from 'node:crypto';

export interface HostKey {
  /** SEC1 PEM of the ECDSA P-256 private key, as ssh2 accepts for a host key. */
  privateKeyPem: string;
  /** SSH wire encoding of the public key. */
  publicKeyBlob: Buffer;
  /** MD5 of the public key blob in colon hex, the spec's `fingerprint`. */
  fingerprint: string;
}

/** Order of the P-256 group. */
const P256_N = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');
const WARM_UP_ROUNDS = 2048;
const SCALAR_BYTES = 40;

/**
 * A deterministic byte stream from a seed: SHA-512 chained 2048 times, then each block yields the second half of
 * the next hash. It matches the reference system, so the same key_seed gives the same fingerprint there and here.
 */
function seededBytes(seed: string, length: number): Buffer {
  let next: Buffer = Buffer.from(seed, 'utf8');
  for (let i = 0; i < WARM_UP_ROUNDS; i++) next = createHash('sha512').update(next).digest().subarray(0, 32);
  const out: Buffer[] = [];
  let have = 0;
  while (have < length) {
    const h = createHash('sha512').update(next).digest();
    out.push(h.subarray(32, 64));
    next = h.subarray(0, 32);
    have += 32;
  }
  return Buffer.concat(out).subarray(0, length);
}

function sshString(data: Buffer | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

export function md5Fingerprint(blob: Buffer): string {
  return createHash('md5').update(blob).digest('hex').match(/../g)!.join(':');
}

/** Derives the server's SSH host key from `[server] key_seed`. */
export function deriveHostKey(seed: string): HostKey {
  const b = BigInt('0x' + seededBytes(seed, SCALAR_BYTES).toString('hex'));
  const d = (b % (P256_N - 1n)) + 1n;
  const dBytes = Buffer.from(d.toString(16).padStart(64, '0'), 'hex');
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(dBytes);
  const point = ecdh.getPublicKey();
  const publicKeyBlob = Buffer.concat([
    sshString('ecdsa-sha2-nistp256'),
    sshString('nistp256'),
    sshString(point),
  ]);
  const privateKeyPem = createPrivateKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      d: dBytes.toString('base64url'),
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  })
    .export({ type: 'sec1', format: 'pem' })
    .toString();
  return { privateKeyPem, publicKeyBlob, fingerprint: md5Fingerprint(publicKeyBlob) };
}
