// The part of ssh2 (CommonJS, no bundled types) that host.ssh.command uses.
declare module "ssh2" {
  import type { EventEmitter } from "node:events";
  import type { Readable } from "node:stream";

  export interface ClientChannel extends Readable {
    readonly stderr: Readable;
    on(event: "close", listener: (code: number | null, signal?: string) => void): this;
    on(event: "data", listener: (chunk: Buffer) => void): this;
  }

  export interface ConnectConfig {
    host: string;
    port: number;
    username: string;
    privateKey: Buffer | string;
    passphrase?: string;
    readyTimeout?: number;
    /** Called with the server's host key blob; true accepts it. */
    hostVerifier?: (key: Buffer) => boolean;
  }

  export class Client extends EventEmitter {
    connect(config: ConnectConfig): this;
    exec(command: string, callback: (err: Error | undefined, channel: ClientChannel) => void): this;
    end(): this;
    destroy(): this;
  }
}
