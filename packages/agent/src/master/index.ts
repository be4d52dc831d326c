export * from './master-build';
export { OS_RECIPES, type OsRecipe, osRecipe } from './os-recipes';
