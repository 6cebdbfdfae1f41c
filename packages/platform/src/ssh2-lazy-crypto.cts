/**
 * What the agent bundle gives ssh2 in place of its native crypto binding (scripts/agent-bundle.ts): the binding's
 * AES-GCM classes, in JavaScript on node's crypto until `useNativeSsh2Crypto()` loads the binding, then each
 * cipher hands its next packet to a native instance that takes over its key and IV. Loading the binding maps it and
 * resolves its symbols against node's (~1.2 MiB of an idle agent's RSS, 2026-11-25), which only a transfer needs:
 * an idle agent's few control packets are as quick in JavaScript.
 *
 * Only AES-GCM is offered here; ssh2 uses its own JavaScript for the other ciphers when the binding lacks them.
 * CommonJS, so that ssh2's `require()` of the binding and the agent's import share this one module in the bundle.
 */
import { createCipheriv, createDecipheriv, type CipherGCMTypes } from 'node:crypto';

const TAG_LENGTH = 16;

/** ssh2's binding, as its crypto module uses it for AES-GCM. */
interface NativeGcmCipher {
  encrypt(packet: Uint8Array): void;
  free(): void;
}
interface NativeGcmDecipher {
  decrypt(packet: Uint8Array, length: number, tag: Buffer): void;
  free(): void;
}
interface Ssh2Binding {
  AESGCMCipher: new (sslName: string, key: Buffer, iv: Buffer) => NativeGcmCipher;
  AESGCMDecipher: new (sslName: string, key: Buffer, iv: Buffer) => NativeGcmDecipher;
}

/** undefined until tried, then the binding or null where it is not there (the one-file agent). */
let binding: Ssh2Binding | null | undefined;

/**
 * Loads ssh2's native binding once; every AES-GCM cipher uses it from its next packet on. Returns whether it is
 * there.
 */
export function useNativeSsh2Crypto(): boolean {
  if (binding === undefined) {
    try {
      // A native addon: require() is what loads one, and the bundle keeps this path for node to resolve.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      binding = require('ssh2/lib/protocol/crypto/build/Release/sshcrypto.node') as Ssh2Binding;
    } catch {
      binding = null;
    }
  }
  return binding !== null;
}

/** The next nonce: RFC 5647 7.1, the 64-bit invocation counter after the 4 fixed bytes, big-endian. */
function nextNonce(iv: Buffer): void {
  for (let i = 11; i >= 4; i--) {
    iv[i] = ((iv[i] as number) + 1) & 0xff;
    if (iv[i] !== 0) return;
  }
}

/** Encrypts `<length> <padding length> <payload> <padding> <room for the tag>` in place, the length as AAD. */
export class AESGCMCipher {
  private readonly iv: Buffer;
  private native: NativeGcmCipher | undefined;

  constructor(
    private readonly sslName: CipherGCMTypes,
    private readonly key: Buffer,
    iv: Buffer,
  ) {
    this.iv = Buffer.from(iv);
  }

  encrypt(packet: Uint8Array): void {
    if (!this.native && binding) this.native = new binding.AESGCMCipher(this.sslName, this.key, this.iv);
    if (this.native) return this.native.encrypt(packet);
    const end = packet.length - TAG_LENGTH;
    const cipher = createCipheriv(this.sslName, this.key, this.iv);
    cipher.setAAD(packet.subarray(0, 4));
    packet.set(cipher.update(packet.subarray(4, end)), 4);
    cipher.final();
    packet.set(cipher.getAuthTag(), end);
    nextNonce(this.iv);
  }

  free(): void {
    this.native?.free();
  }
}

/** Decrypts `<padding length> <payload> <padding>` in place, checking `tag` with the packet length as AAD. */
export class AESGCMDecipher {
  private readonly iv: Buffer;
  private readonly aad = Buffer.alloc(4);
  private native: NativeGcmDecipher | undefined;

  constructor(
    private readonly sslName: CipherGCMTypes,
    private readonly key: Buffer,
    iv: Buffer,
  ) {
    this.iv = Buffer.from(iv);
  }

  decrypt(packet: Uint8Array, length: number, tag: Buffer): void {
    if (!this.native && binding) this.native = new binding.AESGCMDecipher(this.sslName, this.key, this.iv);
    if (this.native) return this.native.decrypt(packet, length, tag);
    const decipher = createDecipheriv(this.sslName, this.key, this.iv);
    this.aad.writeUInt32BE(length);
    decipher.setAAD(this.aad);
    decipher.setAuthTag(tag);
    const plain = decipher.update(packet);
    // Throws when the tag does not match, before the packet is touched.
    decipher.final();
    packet.set(plain);
    nextNonce(this.iv);
  }

  free(): void {
    this.native?.free();
  }
}
