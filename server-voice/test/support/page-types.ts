/**
 * The few browser APIs the tests' page scripts use, typed here: this package compiles without the DOM library
 * (adding it would retype Node's fetch and streams everywhere). Inside `page.evaluate`, `globalThis` is cast to
 * `PageGlobals`.
 */
export interface PageTrack {
  stop(): void;
}

export interface PageStream {
  getAudioTracks(): PageTrack[];
  getTracks(): PageTrack[];
}

export interface PageMessageEvent {
  data: unknown;
}

export interface PageDataChannel {
  onopen: (() => void) | null;
  onmessage: ((event: PageMessageEvent) => void) | null;
  send(data: string): void;
}

export interface PagePeerConnection {
  addTrack(track: PageTrack): void;
  createDataChannel(label: string): PageDataChannel;
  createOffer(): Promise<{ type: string; sdp?: string }>;
  setLocalDescription(description: { type: string; sdp?: string }): Promise<void>;
  setRemoteDescription(description: { type: 'answer'; sdp: string }): Promise<void>;
  readonly localDescription: { sdp: string } | null;
  close(): void;
}

export interface PageGlobals {
  RTCPeerConnection: new () => PagePeerConnection;
  navigator: { mediaDevices: { getUserMedia(constraints: { audio: boolean }): Promise<PageStream> } };
}
