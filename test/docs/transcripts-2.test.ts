import { describeTranscripts } from "./transcripts.ts";

// A share of the pages whose transcripts run against a real daemon (test/docs/transcripts.ts).
describeTranscripts(2);
