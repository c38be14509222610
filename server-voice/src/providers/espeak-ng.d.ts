/** The part of the `espeak-ng` npm package (an Emscripten module factory) that the offline TTS uses. */
declare module 'espeak-ng' {
  interface EspeakFileSystem {
    readFile(path: string): Uint8Array;
    writeFile(path: string, data: string): void;
  }
  interface EspeakInstance {
    FS: EspeakFileSystem;
  }
  interface EspeakModuleOptions {
    arguments: string[];
    print?: (line: string) => void;
    printErr?: (line: string) => void;
    preRun?: Array<(module: EspeakInstance) => void>;
    /** Emscripten hook: instantiate the (already compiled) module ourselves. */
    instantiateWasm?: (imports: object, done: (instance: object) => void) => object;
  }
  export default function ESpeakNg(options: EspeakModuleOptions): Promise<EspeakInstance>;
}
