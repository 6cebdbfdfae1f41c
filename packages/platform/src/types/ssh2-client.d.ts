/** ssh2's client module on its own (see ssh2-client-loader.ts); @types/ssh2 describes only the package's main. */
declare module 'ssh2/lib/client.js' {
  const Client: unknown;
  export default Client;
}
