import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createHttp } from '../shared/http';
import { ConsoleToken } from '../shared/token';
import { App } from './App';
import { createAuthApi } from './access';
import { createClustersApi } from './clusters-api';
import type { ConsoleEnv } from './context';
import { createMetalApi } from './metal-api';
import './console.css';

// The server writes where each API is into <body data-…> (see packages/cli/src/console).
const ds = document.body.dataset;
// One token for the whole console (and the kind panel: same sessionStorage key).
const token = new ConsoleToken();
const env: ConsoleEnv = {
  metal: createMetalApi(createHttp(ds.metalBase || '/api/metal', token)),
  clusters: createClustersApi(createHttp(ds.clustersBase || '', token)),
  auth: createAuthApi(createHttp(ds.clustersBase || '', token)),
  token,
  kindUrl: ds.kindUrl || '/kind/',
  docsUrl: ds.docsUrl || '/docs',
  redocUrl: ds.redocUrl || '/redoc',
};

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App env={env} />
  </StrictMode>,
);
